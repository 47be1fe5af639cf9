package renderer_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/scope"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
	"github.com/crawlstack/crawlstack/shared/crawl/web/httpfetch"
	"github.com/crawlstack/crawlstack/shared/crawl/web/netguard"
	"github.com/crawlstack/crawlstack/shared/crawl/web/robots"
	"github.com/crawlstack/crawlstack/shared/handler/renderer"
	"github.com/crawlstack/crawlstack/shared/handler/renderer/renderertest"
	"github.com/crawlstack/crawlstack/shared/testkit/embedtest"
)

// subSite is a loopback site of sub-requests that counts what it is asked.
type subSite struct {
	*httptest.Server
	mu   sync.Mutex
	hits map[string]int
}

func newSubSite(t *testing.T) *subSite {
	s := &subSite{hits: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.Method+" "+r.URL.Path]++
		s.mu.Unlock()
		switch r.URL.Path {
		case "/robots.txt":
			io.WriteString(w, "User-agent: *\nDisallow: /private/\n")
		case "/api/data":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"items": 3}`)
		case "/away":
			http.Redirect(w, r, strings.Replace(s.URL, "127.0.0.1", "localhost", 1)+"/api/data", http.StatusFound)
		default:
			io.WriteString(w, "secret")
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *subSite) hit(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[key]
}

// web is fetch's side of the web as the pipeline builds it: allow is the guard's allow-list.
func web(t *testing.T, allow ...netip.Prefix) renderer.Web {
	t.Helper()
	guard := netguard.New(allow, nil)
	client, err := httpfetch.New(httpfetch.Options{UserAgent: "crawlstack-test/1", Guard: guard, TotalTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	return renderer.Web{HTTP: client, Robots: robots.New(client, "crawlstack-test/1", time.Hour), Guard: guard}
}

// TestTheLoaderHoldsSubRequestsToTheGuardScopeAndRobots: a rendered page's sub-requests load
// only when the SSRF guard, the crawl's scope and robots.txt allow them, redirects included, and
// only as GET or HEAD; a refused one never reaches the server.
func TestTheLoaderHoldsSubRequestsToTheGuardScopeAndRobots(t *testing.T) {
	s := newSubSite(t)
	c := &crawlspec.Crawl{Rules: scope.DefaultRules(), UserAgent: "crawlstack-test/1"}
	page := message.Page{URL: s.URL + "/", FinalURL: s.URL + "/", Root: s.URL + "/"}
	loopback := netip.MustParsePrefix("127.0.0.0/8")
	l := renderer.NewLoader(web(t, loopback), c, page)
	ctx := context.Background()
	get := func(l interface {
		Load(context.Context, *http.Request) (*http.Response, error)
	}, method, u string) (string, error) {
		req, err := http.NewRequestWithContext(ctx, method, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := l.Load(ctx, req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b), nil
	}
	if body, err := get(l, http.MethodGet, s.URL+"/api/data"); err != nil || body != `{"items": 3}` {
		t.Errorf("an allowed sub-request: %q, %v", body, err)
	}
	other := strings.Replace(s.URL, "127.0.0.1", "localhost", 1)
	for name, tc := range map[string]struct{ method, url, never string }{
		"robots.txt disallows it":  {http.MethodGet, s.URL + "/private/key", "GET /private/key"},
		"out of the crawl's scope": {http.MethodGet, other + "/api/data", ""},
		"a POST":                   {http.MethodPost, s.URL + "/api/data?post", "POST /api/data"},
		"a redirect out of scope":  {http.MethodGet, s.URL + "/away", ""},
		"not http":                 {http.MethodGet, "file:///etc/passwd", ""},
	} {
		_, err := get(l, tc.method, tc.url)
		if !errors.Is(err, renderer.ErrRefused) {
			t.Errorf("%s: %v, want a refusal", name, err)
		}
		if tc.never != "" && s.hit(tc.never) > 0 {
			t.Errorf("%s: the server was asked %s", name, tc.never)
		}
	}
	// The SSRF guard: without loopback allowed, a script's request to it is refused before any dial.
	guarded := renderer.NewLoader(web(t), c, page)
	before := s.hit("GET /api/data")
	if _, err := get(guarded, http.MethodGet, s.URL+"/api/data"); !errors.Is(err, renderer.ErrRefused) {
		t.Errorf("a loopback sub-request under the default guard: %v, want a refusal", err)
	}
	if s.hit("GET /api/data") != before {
		t.Error("the guard let a sub-request to a non-public address reach it")
	}
}

// TestAScriptsSubRequestsGoThroughTheHandlersLoader: the handler renders with a Loader over its
// Web, so a page's script that fetches a loopback address is refused under the default SSRF
// guard (the rendered DOM says why, and the server is never asked), and loads when the address is
// allowed.
func TestAScriptsSubRequestsGoThroughTheHandlersLoader(t *testing.T) {
	s := newSubSite(t)
	for _, tc := range []struct {
		name  string
		allow []netip.Prefix
		want  string
	}{
		{"default guard", nil, `<p class="refused">`},
		{"loopback allowed", []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, `<p class="loaded">{&#34;items&#34;: 3}</p>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			be := embedtest.Open(t, renderQ, parseQ)
			state := crawlstate.New(be.Table)
			root := s.URL + "/"
			r := renderer.New(renderer.Config{ParseQueue: parseQ}, renderer.Deps{Parsed: state, Blobs: be.Blobs, Send: be.Queue,
				Crawls: crawlWith(&crawlspec.Render{Patterns: []string{"."}}), Browser: &renderertest.Browser{}, Web: web(t, tc.allow...)})
			at := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
			rec0, err := warcfile.EncodeRecord(warcfile.Page{URL: root, Status: 200, Header: http.Header{"Content-Type": {"text/html"}},
				Body: []byte(`<html><body><div data-render-load="/api/data"></div></body></html>`), FetchedAt: at})
			if err != nil {
				t.Fatal(err)
			}
			f, err := warcfile.Assemble("f.warc.gz", at, []warcfile.Record{rec0})
			if err != nil {
				t.Fatal(err)
			}
			if err := be.Blobs.Put(context.Background(), "pages/c1/f.warc.gz", f.Data, warcfile.ContentType); err != nil {
				t.Fatal(err)
			}
			before := s.hit("GET /api/data")
			m := message.Parse{Header: message.Header{Crawl: crawlID}, File: "pages/c1/f.warc.gz", Pages: []message.Page{{URL: root,
				FinalURL: root, Root: root, Status: 200, ContentType: "text/html", FetchedAt: at, Offset: f.Spans[0].Offset, Length: f.Spans[0].Length}}}
			if got := embedtest.Failures(t, r.Handle, rec(t, "r1", m)); len(got) != 0 {
				t.Fatalf("failures %v", got)
			}
			msgs, err := be.Queue.Receive(context.Background(), parseQ, 1, time.Minute, 0)
			if err != nil || len(msgs) != 1 {
				t.Fatalf("%d messages to parse (%v)", len(msgs), err)
			}
			fwd, err := message.DecodeParse(msgs[0].Body)
			if err != nil || fwd.Pages[0].Rendered == nil {
				t.Fatalf("forwarded %+v (%v), want a rendered page", fwd, err)
			}
			ref := fwd.Pages[0].Rendered
			raw, err := be.Blobs.GetRange(context.Background(), ref.Key, ref.Offset, ref.Length)
			if err != nil {
				t.Fatal(err)
			}
			c, err := warcfile.DecodeConversion(raw)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(c.Body), tc.want) {
				t.Errorf("the rendered DOM has no %s:\n%s", tc.want, c.Body)
			}
			if tc.allow == nil && s.hit("GET /api/data") != before {
				t.Error("a script's request to a non-public address reached it")
			}
		})
	}
}
