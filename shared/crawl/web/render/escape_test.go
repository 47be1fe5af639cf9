package render_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/web/links"
	"github.com/crawlstack/crawlstack/shared/crawl/web/render"
	"github.com/crawlstack/crawlstack/shared/demo/jssite"
)

// What the Fetch domain does not see cannot get out either: a WebSocket and a service worker's
// script (fetched outside the page's interception) meet the browser's refusing proxy, so the
// listener the socket aims at is never dialled and the worker never registers; so does a window
// the page opens (a tab outside the interception); a beacon and an event source are refused as
// types; nothing else reaches the proxy.
func TestRenderKeepsWebSocketsBeaconsAndWorkersInside(t *testing.T) {
	c := sharedBrowser(t)
	before := len(c.Escapes())
	ln, dialled := countingListener(t, "127.0.0.1")
	page := `<!DOCTYPE html><html><body><script>
const beacon = navigator.sendBeacon("/beacon", "x");
window.open("/popup");
const ws = new Promise(ok => { const w = new WebSocket("ws://` + ln.Addr().String() + `/ws"); w.onclose = () => ok("ws closed"); });
const es = new Promise(ok => { const e = new EventSource("/events"); e.onerror = () => { e.close(); ok("es failed"); }; });
const sw = navigator.serviceWorker ? navigator.serviceWorker.register("/sw.js").then(() => "sw registered", () => "sw refused") : Promise.resolve("no sw");
Promise.all([ws, es, sw]).then(r => { const d = document.createElement("div"); d.id = "done";
  d.textContent = r.join(","); document.body.appendChild(d); });
</script></body></html>`
	s := newSite(t, map[string]resource{"/sw.js": {"text/javascript", "self.addEventListener('fetch', e => e.respondWith(fetch('/beacon')))"}})
	res, err := c.Render(context.Background(), render.Request{Page: pageOf(s, "/", page),
		Wait: render.Wait{Selector: "#done"}, Loader: newLoader(t)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.DOM), `<div id="done">ws closed,es failed,`) {
		t.Errorf("the page did not see its WebSocket close and its event source fail:\n%s", res.DOM)
	}
	if n := dialled.Load(); n != 0 {
		t.Errorf("the WebSocket's listener was dialled %d times", n)
	}
	for _, path := range []string{"/beacon", "/events", "/popup"} {
		if s.hit(path) != 0 {
			t.Errorf("%s: the site was asked %d times", path, s.hit(path))
		}
	}
	for path, typ := range map[string]string{"/beacon": "ping", "/events": "eventsource"} {
		if got := subsOf(res, path); len(got) != 1 || got[0].Type != typ || got[0].Refused != render.RefusedType {
			t.Errorf("%s: sub-requests %+v: want one %s refused as %q", path, got, typ, render.RefusedType)
		}
	}
	s.onlyLoader(t)
	if !strings.Contains(string(res.DOM), ",sw refused</div>") || s.hit("/sw.js") != 0 {
		t.Errorf("the service worker registered, or its script was fetched from the site (%d times)", s.hit("/sw.js"))
	}
	wsSeen, swSeen, popupSeen := false, false, false
	for _, line := range c.Escapes()[before:] {
		switch {
		case strings.Contains(line, ln.Addr().String()):
			wsSeen = true
		case strings.Contains(line, "/sw.js "):
			swSeen = true
		case strings.Contains(line, "/popup "):
			popupSeen = true // a window the page opened is a tab of its own, outside the interception
		case !strings.Contains(line, "/favicon.ico "):
			t.Errorf("a request besides the WebSocket, the worker and the popup reached the refusing proxy: %q", line)
		}
	}
	if !wsSeen || !swSeen || !popupSeen {
		t.Errorf("the WebSocket (%v), the worker's script (%v) or the popup (%v) never reached the refusing proxy (escapes %q): what stopped it?",
			wsSeen, swSeen, popupSeen, c.Escapes()[before:])
	}
}

// A script that sets location is refused: the site is not asked, the DOM is the page's own.
func TestRenderRefusesNavigationAway(t *testing.T) {
	c := sharedBrowser(t)
	s := newSite(t, map[string]resource{"/elsewhere": {"text/html", "<p>elsewhere</p>"}})
	page := `<!DOCTYPE html><html><body><p id="home">home</p><script>location.href = "/elsewhere";</script></body></html>`
	res, err := c.Render(context.Background(), render.Request{Page: pageOf(s, "/", page),
		Wait: render.Wait{NetworkIdle: true}, Loader: newLoader(t)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.DOM), `<p id="home">home</p>`) || s.hit("/elsewhere") != 0 {
		t.Errorf("site asked %d times; DOM:\n%s", s.hit("/elsewhere"), res.DOM)
	}
	if got := subsOf(res, "/elsewhere"); len(got) != 1 || got[0].Refused != render.RefusedNavigation {
		t.Errorf("sub-requests %+v: want /elsewhere refused as %q", got, render.RefusedNavigation)
	}
}

// A Loader's refusal fails that request only, with its error as the reason; a 500 is a
// response, handed to the page.
func TestRenderHandsTheLoadersAnswersToThePage(t *testing.T) {
	c := sharedBrowser(t)
	s := newSite(t, nil)
	l := loaderFunc(func(_ context.Context, req *http.Request) (*http.Response, error) {
		switch req.URL.Path {
		case "/refused.js":
			return nil, errRefused
		case "/nothing.js":
			return nil, nil
		}
		return &http.Response{StatusCode: 500, Header: http.Header{"Content-Type": {"text/plain"}},
			Body: http.NoBody}, nil
	})
	page := `<!DOCTYPE html><html><body><script src="/refused.js"></script><script src="/nothing.js"></script><script>
fetch("/broken").then(r => { const d = document.createElement("div"); d.id = "done"; d.textContent = r.status; document.body.appendChild(d); });
</script></body></html>`
	res, err := c.Render(context.Background(), render.Request{Page: pageOf(s, "/", page), Wait: render.Wait{Selector: "#done"}, Loader: l})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.DOM), `<div id="done">500</div>`) {
		t.Errorf("DOM:\n%s", res.DOM)
	}
	if got := subsOf(res, "/refused.js"); len(got) != 1 || got[0].Type != "script" || got[0].Refused != errRefused.Error() {
		t.Errorf("sub-requests %+v: want /refused.js refused with the Loader's error", got)
	}
	if got := subsOf(res, "/nothing.js"); len(got) != 1 || got[0].Refused != "the Loader returned no response" {
		t.Errorf("sub-requests %+v: want /nothing.js refused: the Loader gave neither response nor error", got)
	}
	if got := subsOf(res, "/broken"); len(got) != 1 || got[0].Status != 500 || got[0].Refused != "" {
		t.Errorf("sub-requests %+v: want /broken loaded with status 500", got)
	}
}

// Bad requests are refused before a tab opens, each with the reason.
func TestRenderRefusesBadRequests(t *testing.T) {
	c := sharedBrowser(t)
	ok := render.Request{Page: render.Page{URL: "http://127.0.0.1/", Body: []byte("x")}, Loader: loaderFunc(nil)}
	for _, tc := range []struct {
		name string
		edit func(*render.Request)
		want string
	}{
		{"relative URL", func(r *render.Request) { r.Page.URL = "/p" }, "absolute http or https"},
		{"file URL", func(r *render.Request) { r.Page.URL = "file:///etc/passwd" }, "absolute http or https"},
		{"no loader", func(r *render.Request) { r.Loader = nil }, "no Loader"},
		{"bad selector", func(r *render.Request) { r.Wait.Selector = "div[" }, `wait selector "div["`},
		{"negative wait", func(r *render.Request) { r.Wait.Max = -1 }, "must not be negative"},
		{"negative cap", func(r *render.Request) { r.Limits.MaxRequests = -1 }, "must not be negative"},
		{"negative bytes", func(r *render.Request) { r.Limits.MaxBytes = -1 }, "must not be negative"},
		{"unknown type", func(r *render.Request) { r.Limits.Load = []string{"pictures"} }, `load "pictures": not a resource type`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := ok
			tc.edit(&req)
			_, err := c.Render(context.Background(), req)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v: want one that says %q", err, tc.want)
			}
		})
	}
}

// Without a browser NewChromium says so, wrapping ErrNoBrowser, and says how to install one.
func TestNewChromiumWithoutABrowser(t *testing.T) {
	t.Run("named binary missing", func(t *testing.T) {
		_, err := render.NewChromium(render.Options{Path: "/nonexistent/chromium"})
		if !errors.Is(err, render.ErrNoBrowser) || !strings.Contains(err.Error(), "apt-get install") {
			t.Errorf("error %v: want ErrNoBrowser and how to install one", err)
		}
	})
	t.Run("nothing on PATH", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		t.Setenv(render.EnvChromium, "")
		_, err := render.NewChromium(render.Options{})
		if !errors.Is(err, render.ErrNoBrowser) || !strings.Contains(err.Error(), render.EnvChromium) {
			t.Errorf("error %v: want ErrNoBrowser naming %s", err, render.EnvChromium)
		}
	})
	t.Run("binary that is no browser", func(t *testing.T) {
		t.Setenv(render.EnvChromium, "/bin/true")
		_, err := render.NewChromium(render.Options{})
		if !errors.Is(err, render.ErrNoBrowser) {
			t.Errorf("error %v: want ErrNoBrowser", err)
		}
	})
}

// Renders of the JS site at once, in their own tabs, each get their own page's links and text.
func TestConcurrentRendersOfTheJSSite(t *testing.T) {
	c := sharedBrowser(t)
	site := jssite.New(jssite.Options{Pages: 8, Links: 2})
	defer site.Close()
	l := newLoader(t)
	errs := make(chan error, site.Pages())
	for i := range site.Pages() {
		go func() { errs <- renderJSPage(c, site, i, l) }()
	}
	for range site.Pages() {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	for i := range site.Pages() {
		if n := site.Hits(jssite.Path(i)); n != 0 {
			t.Errorf("page %d asked of the site %d times: the browser must take it from the Page", i, n)
		}
	}
	if ua := site.UserAgents(); len(ua) != 1 || ua[0] != loaderUA {
		t.Errorf("the site saw User-Agents %q: want the Loader's only", ua)
	}
}

// renderJSPage renders page i of the JS site from its stored HTML and checks its DOM against
// the site's own list of links and text.
func renderJSPage(c *render.Chromium, site *jssite.Site, i int, l render.Loader) error {
	res, err := c.Render(context.Background(), render.Request{Page: render.Page{URL: site.PageURL(i), Status: 200,
		Header: http.Header{"Content-Type": {"text/html"}}, Body: site.HTML(i)}, Wait: render.Wait{NetworkIdle: true}, Loader: l})
	if err != nil {
		return err
	}
	u, _ := url.Parse(site.PageURL(i))
	page, err := links.Extract(res.DOM, "text/html", u, links.Options{})
	if err != nil {
		return fmt.Errorf("page %d: %w", i, err)
	}
	var got []string
	for _, l := range page.Links {
		got = append(got, l.URL)
	}
	if !slices.Equal(got, site.Links(i)) || !strings.Contains(string(res.DOM), jssite.Text(i)) || res.TimedOut {
		return fmt.Errorf("page %d: links %q, want %q; text there %v; timed out %v; DOM:\n%s",
			i, got, site.Links(i), strings.Contains(string(res.DOM), jssite.Text(i)), res.TimedOut, res.DOM)
	}
	return nil
}

// A browser of its own renders the JS site and stops: nothing but the pages' own favicon
// requests reached its refusing proxy (Chromium's calls to Google at start are turned off by
// its flags), and Close is idempotent.
func TestBrowserCallsNoOneAtStart(t *testing.T) {
	sharedBrowser(t) // skips, or fails, as the other tests do without a browser
	c, err := render.NewChromium(render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	site := jssite.New(jssite.Options{Pages: 3})
	defer site.Close()
	l := newLoader(t)
	for i := range site.Pages() {
		if err := renderJSPage(c, site, i, l); err != nil {
			t.Error(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := c.Render(context.Background(), render.Request{Page: render.Page{URL: site.URL() + "/", Body: site.HTML(0)},
		Loader: l}); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Render after Close: %v: want an error saying the browser is closed", err)
	}
	noEscapes(t, c, 0)
}

// countingListener listens on a free port of host until the test ends, and counts the
// connections made to it, closing each at once: a listener the browser must never reach.
func countingListener(t *testing.T, host string) (net.Listener, *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", host+":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	dialled := &atomic.Int32{}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			dialled.Add(1)
			conn.Close()
		}
	}()
	return ln, dialled
}
