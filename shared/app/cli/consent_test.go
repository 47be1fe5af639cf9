package cli

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/crawlstack/crawlstack/shared/testkit/tunnelproxy"
)

// consentSite is a loopback site behind a consent wall: without the cookie consent=yes every
// page is the wall, with no links; with it, / links to /products, which links to /products/1.
type consentSite struct {
	*httptest.Server
	mu   sync.Mutex
	seen map[string][]string // path -> the consent cookie of each request ("": none)
}

func newConsentSite(t *testing.T) *consentSite {
	s := &consentSite{seen: map[string][]string{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		consent := ""
		if c, err := r.Cookie("consent"); err == nil { // net/http's own cookie parser
			consent = c.Value
		}
		s.mu.Lock()
		s.seen[r.URL.Path] = append(s.seen[r.URL.Path], consent)
		s.mu.Unlock()
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		if consent != "yes" {
			fmt.Fprint(w, `<html><head><title>Cookie consent</title></head><body>Accept our cookies to go on.</body></html>`)
			return
		}
		next := map[string]string{"/": "/products", "/products": "/products/1"}[r.URL.Path]
		fmt.Fprintf(w, `<html><head><title>%s</title></head><body><a href="%s">next</a></body></html>`, r.URL.Path, next)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *consentSite) paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for p := range s.seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// TestConsentCookieOpensTheConsentWall: a spec's hosts entry gives the site its consent cookie,
// which every request to it carries, robots.txt's too, so the crawl gets past the wall to the
// pages only the consented site links to; the WARC request records hold the Cookie header
// redacted. The same crawl without the cookie sees the wall alone (the oracle that the wall
// works).
func TestConsentCookieOpensTheConsentWall(t *testing.T) {
	site := newConsentSite(t)
	host := strings.TrimPrefix(site.URL, "http://")
	spec := writeFile(t, "consent.yaml", fmt.Sprintf("version: 1\nseeds: [%s/]\nhosts:\n  %q:\n    cookies: {consent: \"yes\", region: eu}\n", site.URL, host))
	state := t.TempDir()
	code, _, stderr := runMain(t, "run", "--json", "--allow-net", "127.0.0.0/8", "--host-rps", "0", "--state", state, spec)
	if code != 0 {
		t.Fatalf("crawl run: exit %d\n%s", code, stderr)
	}
	if got, want := strings.Join(site.paths(), " "), "/ /products /products/1 /robots.txt"; got != want {
		t.Errorf("the site saw %s, want %s: the crawl did not get past the consent wall", got, want)
	}
	site.mu.Lock()
	for p, cs := range site.seen {
		for _, c := range cs {
			if c != "yes" {
				t.Errorf("a request of %s came with consent %q, want yes", p, c)
			}
		}
	}
	site.mu.Unlock()
	warcs := 0
	err := filepath.WalkDir(state, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".warc.gz") {
			return err
		}
		warcs++
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			return err
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			return err
		}
		if n := bytes.Count(b, []byte("Cookie: [redacted]\r\n")); n == 0 || bytes.Contains(b, []byte("consent=yes")) {
			t.Errorf("%s: %d request records with Cookie redacted, or the cookie's value in it", filepath.Base(p), n)
		}
		return nil
	})
	if err != nil || warcs == 0 {
		t.Fatalf("read %d WARC files: %v", warcs, err)
	}

	walled := newConsentSite(t)
	spec = writeFile(t, "walled.yaml", fmt.Sprintf("version: 1\nseeds: [%s/]\n", walled.URL))
	if code, _, stderr := runMain(t, "run", "--allow-net", "127.0.0.0/8", "--host-rps", "0", "--state", t.TempDir(), spec); code != 0 {
		t.Fatalf("crawl run without the cookie: exit %d\n%s", code, stderr)
	}
	if got, want := strings.Join(walled.paths(), " "), "/ /robots.txt"; got != want {
		t.Errorf("without the cookie the site saw %s, want %s", got, want)
	}
}

// TestTrySendsTheHostsCookies: crawl try sends a spec's hosts entry's cookies as a crawl does,
// and sees the page behind the consent wall.
func TestTrySendsTheHostsCookies(t *testing.T) {
	site := newConsentSite(t)
	host := strings.TrimPrefix(site.URL, "http://")
	spec := writeFile(t, "consent.yaml", fmt.Sprintf("version: 1\nseeds: [%s/]\nextract: {title: {css: title}}\nhosts:\n  %q:\n    cookies: {consent: \"yes\"}\n", site.URL, host))
	got := tried(t, "--allow-net", "127.0.0.0/8", spec, site.URL+"/products")
	if got.Data["title"] != "/products" {
		t.Errorf("crawl try saw the title %v, want /products: the wall, without the cookie", got.Data["title"])
	}
}

// TestStickyProxyKeepsTheConsentedHostOnOneProxy: under per-request rotation through two
// proxies, a hosts entry with sticky_proxy sends every request of its host (robots.txt's too)
// through one of them, with its cookies; the proxies' counts of what they carried are the oracle.
func TestStickyProxyKeepsTheConsentedHostOnOneProxy(t *testing.T) {
	site := newConsentSite(t)
	host := strings.TrimPrefix(site.URL, "http://")
	a, b := tunnelproxy.New(t, tunnelproxy.Options{}), tunnelproxy.New(t, tunnelproxy.Options{})
	spec := writeFile(t, "sticky.yaml", fmt.Sprintf("version: 1\nseeds: [%s/]\nhosts:\n  %q:\n    cookies: {consent: \"yes\"}\n    sticky_proxy: true\n", site.URL, host))
	code, _, stderr := runMain(t, "run", "--state", t.TempDir(), "--allow-net", "127.0.0.0/8", "--host-rps", "0", "--json", "--quiet",
		"--proxy", a.URL(), "--proxy", b.URL(), "--proxy-rotation", "request", spec)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if got, want := strings.Join(site.paths(), " "), "/ /products /products/1 /robots.txt"; got != want {
		t.Errorf("the site saw %s, want %s", got, want)
	}
	if got := []int64{a.CarriedRequests(), b.CarriedRequests()}; !(got[0] == 4 && got[1] == 0 || got[0] == 0 && got[1] == 4) {
		t.Errorf("the proxies carried %v of the host's 4 requests, want all through one", got)
	}
	code, _, stderr = runMain(t, "run", "--state", t.TempDir(), "--allow-net", "127.0.0.0/8", spec)
	if code != ExitUsage || !strings.Contains(stderr, "sticky_proxy: this stack fetches through no proxies") {
		t.Errorf("sticky_proxy without proxies: exit %d, want %d with an error that says so\n%s", code, ExitUsage, stderr)
	}
}
