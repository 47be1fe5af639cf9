package render_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/web/render"
)

// A page whose links exist only after its script fetched them from its own site: the DOM has
// them; the site was asked for the JSON by the Loader alone, and never for the page itself.
func TestRenderBuildsLinksAfterAFetch(t *testing.T) {
	c := sharedBrowser(t)
	before := len(c.Escapes())
	const page = `<!DOCTYPE html><html><body><nav id="links"></nav><script>
fetch("/api/links.json").then(r => r.json()).then(d => {
  for (const h of d) { const a = document.createElement("a"); a.href = h; a.textContent = h;
    document.getElementById("links").appendChild(a); }
});</script></body></html>`
	s := newSite(t, map[string]resource{
		"/api/links.json": {"application/json", `["/one", "/two"]`},
		"/":               {"text/html", "<p>the live page: the browser must not ask for it</p>"},
	})
	l := newLoader(t)
	res, err := c.Render(context.Background(), render.Request{Page: pageOf(s, "/", page),
		Wait: render.Wait{NetworkIdle: true}, Loader: l})
	if err != nil {
		t.Fatal(err)
	}
	dom := string(res.DOM)
	for _, want := range []string{`<a href="/one">/one</a>`, `<a href="/two">/two</a>`} {
		if !strings.Contains(dom, want) {
			t.Errorf("DOM lacks %s:\n%s", want, dom)
		}
	}
	if !strings.HasPrefix(dom, "<!DOCTYPE html><html>") || res.TimedOut {
		t.Errorf("DOM starts %.40q, timed out %v: want a doctype, an html element, no time-out", dom, res.TimedOut)
	}
	if got := subsOf(res, "/api/links.json"); len(got) != 1 || got[0].Status != 200 || got[0].Type != "xhr" && got[0].Type != "fetch" || got[0].Refused != "" {
		t.Errorf("sub-requests %+v: want the JSON fetched once, status 200", res.SubRequests)
	}
	if s.hit("/api/links.json") != 1 || s.hit("/") != 0 {
		t.Errorf("site hits: JSON %d, page %d: want 1 and 0", s.hit("/api/links.json"), s.hit("/"))
	}
	s.onlyLoader(t)
	noEscapes(t, c, before)
}

// A script that fetches the cloud metadata address, a private address and a loopback address
// the guard does not allow (where a listener waits) is refused by the Loader on the real SSRF
// guard: the Loader saw each and refused it as SSRF, the listener was never dialled, the browser
// sent nothing out itself.
func TestRenderRefusesBlockedAddressesThroughTheGuard(t *testing.T) {
	c := sharedBrowser(t)
	before := len(c.Escapes())
	ln, dialled := countingListener(t, "127.0.0.2")
	blocked := []string{"http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/", "http://" + ln.Addr().String() + "/secret"}
	page := `<!DOCTYPE html><html><body><script>
const urls = ` + jsList(blocked) + `;
Promise.allSettled(urls.map(u => fetch(u, {mode: "no-cors"}))).then(rs => {
  const d = document.createElement("div"); d.id = "done";
  d.textContent = rs.map(r => r.status).join(","); document.body.appendChild(d);
});</script></body></html>`
	s := newSite(t, nil)
	l := newLoader(t)
	res, err := c.Render(context.Background(), render.Request{Page: pageOf(s, "/", page),
		Wait: render.Wait{Selector: "#done"}, Loader: l})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.DOM), `<div id="done">rejected,rejected,rejected</div>`) {
		t.Errorf("the page's fetches were not all rejected:\n%s", res.DOM)
	}
	asked := l.asked()
	for _, u := range blocked {
		var call *loadCall
		for i := range asked {
			if asked[i].url == u {
				call = &asked[i]
			}
		}
		if call == nil || errclass.Of(call.err) != errclass.SSRF {
			t.Errorf("%s: Loader call %+v: want it asked and refused as SSRF", u, call)
		}
		if got := subsOf(res, strings.TrimPrefix(u, "http://")); len(got) != 1 || got[0].Refused == "" || got[0].Status != 0 {
			t.Errorf("%s: sub-requests %+v: want it listed once, refused", u, got)
		}
	}
	if n := dialled.Load(); n != 0 {
		t.Errorf("the listener on the blocked loopback address was dialled %d times", n)
	}
	noEscapes(t, c, before)
}

func jsList(urls []string) string {
	return `["` + strings.Join(urls, `", "`) + `"]`
}

// Images, fonts and media are refused unless Limits.Load names them: the site is never asked.
func TestRenderRefusesImagesFontsAndMediaByDefault(t *testing.T) {
	c := sharedBrowser(t)
	page := `<!DOCTYPE html><html><head><style>
@font-face { font-family: f; src: url(/f.woff2) format("woff2"); }
body { font-family: f; }</style></head>
<body>text<img src="/a.png"><video src="/v.mp4" autoplay muted></video></body></html>`
	png := "\x89PNG\r\n\x1a\n"
	files := map[string]resource{"/a.png": {"image/png", png}, "/f.woff2": {"font/woff2", "wOF2"}, "/v.mp4": {"video/mp4", "mp4"}}
	for _, tc := range []struct {
		name   string
		load   []string
		loaded string // the one path the site must see; "" for none
	}{
		{"defaults", nil, ""},
		{"images loaded", []string{"Image"}, "/a.png"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSite(t, files)
			res, err := c.Render(context.Background(), render.Request{Page: pageOf(s, "/", page),
				Wait: render.Wait{NetworkIdle: true}, Limits: render.Limits{Load: tc.load}, Loader: newLoader(t)})
			if err != nil {
				t.Fatal(err)
			}
			for path, typ := range map[string]string{"/a.png": "image", "/f.woff2": "font", "/v.mp4": "media"} {
				got := subsOf(res, path)
				if path == tc.loaded {
					if s.hit(path) != 1 || len(got) != 1 || got[0].Status != 200 {
						t.Errorf("%s: %d hits, sub-requests %+v: want it loaded once", path, s.hit(path), got)
					}
					continue
				}
				if s.hit(path) != 0 {
					t.Errorf("%s: the site was asked %d times: want it refused", path, s.hit(path))
				}
				// Chromium asks for a font only when text uses it, and for media only when it
				// plays: each that was asked for must be refused as a blocked type.
				for _, sr := range got {
					if sr.Refused != render.RefusedType || sr.Type != typ {
						t.Errorf("%s: sub-request %+v: want type %s refused as %q", path, sr, typ, render.RefusedType)
					}
				}
			}
			if len(subsOf(res, "/a.png")) == 0 {
				t.Errorf("the image was never asked for: sub-requests %+v", res.SubRequests)
			}
		})
	}
}

// Past MaxRequests a page's sub-requests are refused: the site sees exactly the cap.
func TestRenderCapsTheSubRequests(t *testing.T) {
	c := sharedBrowser(t)
	page := `<!DOCTYPE html><html><body><script>
(async () => { let ok = 0;
  for (let i = 0; i < 8; i++) { try { await fetch("/n/" + i); ok++; } catch (e) {} }
  const d = document.createElement("div"); d.id = "done"; d.textContent = ok; document.body.appendChild(d);
})();</script></body></html>`
	files := map[string]resource{}
	for i := range 8 {
		files["/n/"+string(rune('0'+i))] = resource{"text/plain", "n"}
	}
	s := newSite(t, files)
	res, err := c.Render(context.Background(), render.Request{Page: pageOf(s, "/", page),
		Wait: render.Wait{Selector: "#done"}, Limits: render.Limits{MaxRequests: 3}, Loader: newLoader(t)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.DOM), `<div id="done">3</div>`) {
		t.Errorf("want 3 fetches to succeed:\n%s", res.DOM)
	}
	loaded, refused := 0, 0
	for i := range 8 {
		path := "/n/" + string(rune('0'+i))
		loaded += s.hit(path)
		for _, sr := range subsOf(res, path) {
			if sr.Refused == render.RefusedCap {
				refused++
			}
		}
	}
	if loaded != 3 || refused != 5 {
		t.Errorf("site saw %d, %d refused over the cap: want 3 and 5 (%+v)", loaded, refused, res.SubRequests)
	}
}

// Past MaxBytes, the request that crosses the budget is refused and later ones too.
func TestRenderCapsTheBytes(t *testing.T) {
	c := sharedBrowser(t)
	page := `<!DOCTYPE html><html><body><script>
(async () => { const got = [];
  for (const p of ["/a", "/b", "/c"]) { try { got.push((await (await fetch(p)).text()).length); } catch (e) { got.push("x"); } }
  const d = document.createElement("div"); d.id = "done"; d.textContent = got.join(","); document.body.appendChild(d);
})();</script></body></html>`
	s := newSite(t, map[string]resource{"/a": {"text/plain", strings.Repeat("a", 600)},
		"/b": {"text/plain", strings.Repeat("b", 600)}, "/c": {"text/plain", "c"}})
	res, err := c.Render(context.Background(), render.Request{Page: pageOf(s, "/", page),
		Wait: render.Wait{Selector: "#done"}, Limits: render.Limits{MaxBytes: 1000}, Loader: newLoader(t)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.DOM), `<div id="done">600,x,x</div>`) {
		t.Errorf("want /a read, /b and /c refused:\n%s", res.DOM)
	}
	if got := subsOf(res, "/b"); len(got) != 1 || got[0].Refused != render.RefusedBytes {
		t.Errorf("/b: %+v: want refused %q", got, render.RefusedBytes)
	}
}

// A selector wait takes the page when the element appears, after the network is long idle; a
// network-idle wait on the same page takes it before.
func TestRenderWaitsForTheSelector(t *testing.T) {
	c := sharedBrowser(t)
	page := `<!DOCTYPE html><html><body><script>
setTimeout(() => { const d = document.createElement("p"); d.id = "late"; document.body.appendChild(d); }, 3000);
</script></body></html>`
	s := newSite(t, nil)
	res, err := c.Render(context.Background(), render.Request{Page: pageOf(s, "/", page),
		Wait: render.Wait{Selector: "#late"}, Loader: newLoader(t)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.DOM), `<p id="late"></p>`) || res.TimedOut {
		t.Errorf("selector wait: timed out %v, DOM:\n%s", res.TimedOut, res.DOM)
	}
	res, err = c.Render(context.Background(), render.Request{Page: pageOf(s, "/", page),
		Wait: render.Wait{NetworkIdle: true}, Loader: newLoader(t)})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(res.DOM), `id="late"`) || res.TimedOut {
		t.Errorf("network-idle wait: timed out %v, want the page taken before #late:\n%s", res.TimedOut, res.DOM)
	}
}

// Wait.Max caps a render whose selector never appears, and one whose sub-request never ends
// (the Loader sees its context end).
func TestRenderStopsAtTheTimeCap(t *testing.T) {
	c := sharedBrowser(t)
	s := newSite(t, nil)
	const max = time.Second
	t.Run("selector never appears", func(t *testing.T) {
		res, err := c.Render(context.Background(), render.Request{Page: pageOf(s, "/", "<p>static</p>"),
			Wait: render.Wait{Selector: "#never", Max: max}, Loader: newLoader(t)})
		if err != nil {
			t.Fatal(err)
		}
		if !res.TimedOut || res.Took < max || !strings.Contains(string(res.DOM), "<p>static</p>") {
			t.Errorf("timed out %v after %s: want true after %s or more, with the DOM:\n%s", res.TimedOut, res.Took, max, res.DOM)
		}
	})
	t.Run("sub-request never ends", func(t *testing.T) {
		var ended atomic.Bool
		hang := loaderFunc(func(ctx context.Context, _ *http.Request) (*http.Response, error) {
			<-ctx.Done()
			ended.Store(true)
			return nil, ctx.Err()
		})
		page := `<script>fetch("/hang")</script><p>waiting</p>`
		res, err := c.Render(context.Background(), render.Request{Page: pageOf(s, "/", page),
			Wait: render.Wait{NetworkIdle: true, Max: max}, Loader: hang})
		if err != nil {
			t.Fatal(err)
		}
		if !res.TimedOut || !ended.Load() {
			t.Errorf("timed out %v, the Loader's context ended %v: want both", res.TimedOut, ended.Load())
		}
	})
}

// The caller's context ends a render at once, with its error.
func TestRenderEndsWithTheCallersContext(t *testing.T) {
	c := sharedBrowser(t)
	s := newSite(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Render(ctx, render.Request{Page: pageOf(s, "/", "<p>x</p>"),
		Wait: render.Wait{Selector: "#never", Max: time.Minute}, Loader: newLoader(t)})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 20*time.Second {
		t.Errorf("after %s: %v: want context.DeadlineExceeded soon after 500ms", time.Since(start), err)
	}
}
