package render_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/web/httpfetch"
	"github.com/crawlstack/crawlstack/shared/crawl/web/netguard"
	"github.com/crawlstack/crawlstack/shared/crawl/web/render"
)

// EnvRequireChromium set to 1 (make test sets it) turns a missing browser from a skip into a
// failure.
const EnvRequireChromium = "CRAWL_TEST_REQUIRE_CHROMIUM"

// loaderUA is the User-Agent of the tests' Loader: a site that sees another one was asked by
// someone else (the browser itself).
const loaderUA = "crawlstack-render-test/1"

var (
	browserOnce sync.Once
	browser     *render.Chromium
	browserErr  error
)

// TestMain stops the shared browser after the tests and fails the run when it leaves its
// profile or its process behind.
func TestMain(m *testing.M) {
	code := m.Run()
	if browser != nil {
		if err := browser.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "close the browser:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// sharedBrowser is one Chromium for the package's tests (each Render has its own tab and
// browser context). Without a browser it skips, or fails under CRAWL_TEST_REQUIRE_CHROMIUM=1.
func sharedBrowser(t testing.TB) *render.Chromium {
	t.Helper()
	browserOnce.Do(func() { browser, browserErr = render.NewChromium(render.Options{}) })
	if browserErr != nil {
		if os.Getenv(EnvRequireChromium) == "1" {
			t.Fatalf("%s=1 and no browser: %v", EnvRequireChromium, browserErr)
		}
		t.Skipf("no browser (set %s=1 to fail instead): %v", EnvRequireChromium, browserErr)
	}
	return browser
}

// site is a loopback test site: fixed bodies by path, every request counted with its
// User-Agent.
type site struct {
	*httptest.Server
	mu     sync.Mutex
	hits   map[string]int
	agents map[string]bool
}

type resource struct {
	ctype string
	body  string
}

func newSite(t *testing.T, pages map[string]resource) *site {
	t.Helper()
	s := &site{hits: map[string]int{}, agents: map[string]bool{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		s.agents[r.UserAgent()] = true
		s.mu.Unlock()
		res, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", res.ctype)
		io.WriteString(w, res.body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *site) hit(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

// onlyLoader fails the test when anyone but the Loader asked the site for anything.
func (s *site) onlyLoader(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for ua := range s.agents {
		if ua != loaderUA {
			t.Errorf("the site was asked by User-Agent %q, not only by the Loader (%q)", ua, loaderUA)
		}
	}
}

// loadCall is one request the Loader was asked for, and its error.
type loadCall struct {
	url string
	err error
}

// guardedLoader is a Loader on the crawler's real fetch client and SSRF guard, the guard
// allowing 127.0.0.1 only (the tests' sites): every other private address is refused as in a
// crawl.
type guardedLoader struct {
	client *httpfetch.Client
	mu     sync.Mutex
	calls  []loadCall
}

func newLoader(t *testing.T) *guardedLoader {
	t.Helper()
	c, err := httpfetch.New(httpfetch.Options{UserAgent: loaderUA,
		Guard: netguard.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, nil)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return &guardedLoader{client: c}
}

func (l *guardedLoader) Load(ctx context.Context, req *http.Request) (*http.Response, error) {
	resp, err := l.client.Get(ctx, req.URL.String())
	l.mu.Lock()
	l.calls = append(l.calls, loadCall{url: req.URL.String(), err: err})
	l.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &http.Response{StatusCode: resp.Status, Header: resp.Header, Body: io.NopCloser(bytes.NewReader(resp.Body))}, nil
}

func (l *guardedLoader) asked() []loadCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]loadCall(nil), l.calls...)
}

// loaderFunc adapts a func to render.Loader.
type loaderFunc func(ctx context.Context, req *http.Request) (*http.Response, error)

func (f loaderFunc) Load(ctx context.Context, req *http.Request) (*http.Response, error) {
	return f(ctx, req)
}

// pageOf is the stored response a render starts from: the site's body for path, as fetch
// stored it (the browser never asks the site for it).
func pageOf(s *site, path, body string) render.Page {
	return render.Page{URL: s.URL + path, Status: http.StatusOK,
		Header: http.Header{"Content-Type": {"text/html; charset=utf-8"}}, Body: []byte(body)}
}

// subsOf are the sub-requests of res whose URL ends with suffix.
func subsOf(res render.Result, suffix string) []render.SubRequest {
	var out []render.SubRequest
	for _, sr := range res.SubRequests {
		if strings.HasSuffix(sr.URL, suffix) {
			out = append(out, sr)
		}
	}
	return out
}

// noEscapes fails the test when a request reached the browser's refusing proxy since before,
// but for the browser's own favicon request that a tab closing can leave past the interception.
func noEscapes(t *testing.T, c *render.Chromium, before int) {
	t.Helper()
	for _, line := range c.Escapes()[before:] {
		if !strings.Contains(line, "/favicon.ico ") {
			t.Errorf("a request escaped the interception to the refusing proxy: %q", line)
		}
	}
}

var errRefused = errors.New("refused by the test's Loader")
