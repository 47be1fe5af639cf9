package cli

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/web/httpfetch"
	"github.com/crawlstack/crawlstack/shared/demo/demosite"
)

// TestCrawlThroughProxies crawls a site on loopback through two proxies on loopback, one of them
// dead (it accepts connections and closes them): every page is fetched, all through the healthy
// proxy (its count of what it carried is the oracle), the dead one is taken out after
// DefaultProxyFailures failures, and nothing goes to the site directly.
func TestCrawlThroughProxies(t *testing.T) {
	site := demosite.New(12, 3, 500)
	var direct atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Via-Test-Proxy") == "" {
			direct.Add(1)
		}
		site.ServeHTTP(w, r)
	}))
	defer srv.Close()
	var carried atomic.Int64
	proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		carried.Add(1)
		r.Out.URL = r.In.URL // a forward proxy: the request names its target
		r.Out.Header.Set("Via-Test-Proxy", "1")
	}})
	defer proxy.Close()
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
		"--concurrency", "1", "--proxy", "http://"+dead.Addr().String(), "--proxy", "http://u:pw-not-shown@"+strings.TrimPrefix(proxy.URL, "http://"), seeds)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	s := lastJSON(t, stdout)
	if s.Fetched != 12 || s.Failed != 0 {
		t.Errorf("fetched %d, failed %d; want the site's 12 pages", s.Fetched, s.Failed)
	}
	if direct.Load() != 0 || carried.Load() < 13 {
		t.Errorf("%d requests went to the site directly and the proxy carried %d; want none and the 12 pages with robots.txt", direct.Load(), carried.Load())
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
