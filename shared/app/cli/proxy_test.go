package cli

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/web/httpfetch"
	"github.com/crawlstack/crawlstack/shared/demo/demosite"
	"github.com/crawlstack/crawlstack/shared/testkit/proxycorpus"
	"github.com/crawlstack/crawlstack/shared/testkit/tunnelproxy"
)

// TestCrawlThroughProxies crawls a site on loopback through two proxies on loopback, one of them
// dead (it accepts connections and closes them): every page is fetched, all through the healthy
// proxy (its count of what it carried is the oracle), the dead one is taken out after
// DefaultProxyFailures failures, and nothing goes to the site directly.
func TestCrawlThroughProxies(t *testing.T) {
	site := demosite.New(12, 3, 500)
	var direct atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(tunnelproxy.Carried) == "" {
			direct.Add(1)
		}
		site.ServeHTTP(w, r)
	}))
	defer srv.Close()
	proxy := tunnelproxy.New(t, tunnelproxy.Options{})
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	var refused atomic.Int64
	go func() {
		for {
			c, err := dead.Accept()
			if err != nil {
				return
			}
			refused.Add(1)
			c.Close()
		}
	}()
	seeds := writeFile(t, "seeds.txt", srv.URL+"/\n")
	code, stdout, stderr := runMain(t, "run", "--state", t.TempDir(), "--allow-net", "127.0.0.0/8", "--host-rps", "0", "--json", "--quiet",
		"--concurrency", "1", "--proxy", "http://"+dead.Addr().String(), "--proxy", "http://u:pw-not-shown@"+strings.TrimPrefix(proxy.URL(), "http://"), seeds)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	s := lastJSON(t, stdout)
	if s.Fetched != 12 || s.Failed != 0 {
		t.Errorf("fetched %d, failed %d; want the site's 12 pages", s.Fetched, s.Failed)
	}
	if direct.Load() != 0 || proxy.CarriedRequests() < 13 {
		t.Errorf("%d requests went to the site directly and the proxy carried %d; want none and the 12 pages with robots.txt", direct.Load(), proxy.CarriedRequests())
	}
	if refused.Load() != httpfetch.DefaultProxyFailures {
		t.Errorf("the dead proxy was tried %d times; want %d (its breaker opens after that many failures in a row)", refused.Load(), httpfetch.DefaultProxyFailures)
	}
	if strings.Contains(stdout+stderr, "pw-not-shown") {
		t.Errorf("the proxy's password is in the output:\n%s\n%s", stdout, stderr)
	}
	code, _, stderr = runMain(t, "run", "--state", t.TempDir(), "--proxy", "ftp://u:pw-not-shown@p.test:21", seeds)
	if code != ExitUsage || !strings.Contains(stderr, "--proxy") || strings.Contains(stderr, "pw-not-shown") {
		t.Errorf("a bad proxy: exit %d, stderr %q; want a usage error that names --proxy and not the password", code, stderr)
	}
}

// Every malformed proxy URL of the corpus, given as --proxy or in CRAWL_PROXIES at debug level,
// stops the run with a usage error, and the password is in none of its output.
func TestBadProxiesNeverShowTheirPassword(t *testing.T) {
	seeds := writeFile(t, "seeds.txt", "http://127.0.0.1:1/\n")
	for _, raw := range proxycorpus.Bad(t) {
		code, stdout, stderr := runMain(t, "run", "--state", t.TempDir(), "--log-level", "debug", "--proxy", raw, seeds)
		if code != ExitUsage || !strings.Contains(stderr, "--proxy") {
			t.Errorf("--proxy %q: exit %d, stderr %q; want a usage error that names --proxy", raw, code, stderr)
		}
		if strings.Contains(stdout+stderr, proxycorpus.Marker) {
			t.Errorf("--proxy %q: the password is in the output:\n%s\n%s", raw, stdout, stderr)
		}
		if strings.Contains(raw, ",") {
			continue // CRAWL_PROXIES is comma-separated
		}
		env := map[string]string{"CRAWL_PROXIES": raw}
		defer func(prev func(string) string) { environ = prev }(environ)
		environ = func(k string) string { return env[k] }
		code, stdout, stderr = runMain(t, "run", "--state", t.TempDir(), "--log-level", "debug", seeds)
		environ = os.Getenv
		if code != ExitUsage || strings.Contains(stdout+stderr, proxycorpus.Marker) {
			t.Errorf("CRAWL_PROXIES=%q: exit %d, output:\n%s\n%s\nwant a usage error without the password", raw, code, stdout, stderr)
		}
	}
}
