package robots

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/web/httpfetch"
	"github.com/crawlstack/crawlstack/shared/crawl/web/netguard"
)

const testUA = "crawlstack/0.1 (+https://example.com/bot)"

// getterFunc is a fake Getter.
type getterFunc func(ctx context.Context, rawURL string, maxBody int64, maxRedirects int) (*httpfetch.Response, error)

func (f getterFunc) GetLimited(ctx context.Context, rawURL string, maxBody int64, maxRedirects int) (*httpfetch.Response, error) {
	return f(ctx, rawURL, maxBody, maxRedirects)
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestStatuses fetches robots.txt from a loopback server through the real client.
func TestStatuses(t *testing.T) {
	big := "user-agent: *\ndisallow: /early\n" + strings.Repeat("#"+strings.Repeat("x", 98)+"\n", 6000) + "disallow: /late\n"
	tests := []struct {
		name    string
		handler http.HandlerFunc
		path    string
		allowed bool
	}{
		{"200 rules apply", serve(200, "user-agent: crawlstack\ndisallow: /private\n"), "/private/x", false},
		{"200 other paths allowed", serve(200, "user-agent: crawlstack\ndisallow: /private\n"), "/public", true},
		{"200 disallow all leaves /robots.txt allowed (RFC 9309 2.2.2)", serve(200, "user-agent: *\ndisallow: /\n"), "/robots.txt", true},
		{"200 disallow all", serve(200, "user-agent: *\ndisallow: /\n"), "/robots.txt.bak", false},
		{"200 over 500 KiB is cut, not refused", serve(200, big), "/early", false},
		{"200 rules past 500 KiB ignored", serve(200, big), "/late", true},
		{"404 allows all", serve(404, "user-agent: *\ndisallow: /\n"), "/x", true},
		{"401 allows all", serve(401, ""), "/x", true},
		{"403 allows all", serve(403, ""), "/x", true},
		{"410 allows all", serve(410, ""), "/x", true},
		{"429 disallows all", serve(429, ""), "/x", false},
		{"500 disallows all", serve(500, "user-agent: *\nallow: /\n"), "/x", false},
		{"503 disallows all", serve(503, ""), "/x", false},
		{"5 redirects followed", redirects(5, "user-agent: *\ndisallow: /x\n"), "/x", false},
		{"6 redirects: unavailable, allow all", redirects(6, "user-agent: *\ndisallow: /x\n"), "/x", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			c := New(loopbackClient(t), testUA, time.Hour)
			d, err := c.Check(context.Background(), mustURL(t, srv.URL+tt.path))
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed != tt.allowed {
				t.Errorf("allowed = %v (%s), want %v", d.Allowed, d.Reason, tt.allowed)
			}
			// Only a robots.txt that is down (5xx, 429) disallows for a while; rules are for good.
			temporary := strings.HasPrefix(tt.name, "5") && !strings.HasPrefix(tt.name, "5 redirects") || strings.HasPrefix(tt.name, "429")
			if (d.RetryAfter > 0) != temporary {
				t.Errorf("RetryAfter = %v, want it set only for a temporary disallow", d.RetryAfter)
			}
		})
	}
}

func TestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	tests := []struct {
		name   string
		client *httpfetch.Client
		url    string
	}{
		{"connection refused", loopbackClient(t), "http://" + addr + "/x"},
		{"refused by the address guard", newClient(t, netguard.New(nil, nil)), "http://127.0.0.1/x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := New(tt.client, testUA, time.Hour).Check(context.Background(), mustURL(t, tt.url))
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed {
				t.Errorf("allowed (%s), want disallowed", d.Reason)
			}
		})
	}
}

func serve(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}
}

// redirects answers /robots.txt with a chain of n redirects ending at the body.
func redirects(n int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var i int
		switch {
		case r.URL.Path == "/robots.txt":
		case r.URL.Path == "/final.txt":
			fmt.Fprint(w, body)
			return
		default:
			fmt.Sscanf(r.URL.Path, "/hop/%d", &i)
		}
		next := fmt.Sprintf("/hop/%d", i+1)
		if i+1 >= n {
			next = "/final.txt"
		}
		http.Redirect(w, r, next, http.StatusMovedPermanently)
	}
}

func loopbackClient(t *testing.T) *httpfetch.Client {
	return newClient(t, netguard.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, nil))
}

func newClient(t *testing.T, g *netguard.Guard) *httpfetch.Client {
	t.Helper()
	c, err := httpfetch.New(httpfetch.Options{UserAgent: testUA, Guard: g, TotalTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// countingGetter serves fixed answers per robots URL and counts fetches.
type countingGetter struct {
	mu     sync.Mutex
	counts map[string]int
	status int
}

func (g *countingGetter) GetLimited(_ context.Context, rawURL string, maxBody int64, maxRedirects int) (*httpfetch.Response, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.counts == nil {
		g.counts = map[string]int{}
	}
	g.counts[rawURL]++
	if maxBody != MaxBytes || maxRedirects != MaxRedirects {
		return nil, fmt.Errorf("GetLimited(%d, %d), want (%d, %d)", maxBody, maxRedirects, MaxBytes, MaxRedirects)
	}
	status := g.status
	if status == 0 {
		status = 200
	}
	return &httpfetch.Response{URL: rawURL, Status: status, Body: []byte("user-agent: *\ndisallow: /no\n")}, nil
}

func (g *countingGetter) total() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, c := range g.counts {
		n += c
	}
	return n
}

func TestCacheKeys(t *testing.T) {
	g := &countingGetter{}
	c := New(g, testUA, time.Hour)
	for _, s := range []string{
		"http://a.test/x", "http://A.test:80/y", "http://a.test/no", // one host
		"https://a.test/x", "https://a.test:443/y", // another scheme
		"http://a.test:8080/x", // another port
		"http://[::1]:8080/x",
	} {
		if _, err := c.Check(context.Background(), mustURL(t, s)); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]int{
		"http://a.test:80/robots.txt": 1, "https://a.test:443/robots.txt": 1,
		"http://a.test:8080/robots.txt": 1, "http://[::1]:8080/robots.txt": 1,
	}
	if fmt.Sprint(g.counts) != fmt.Sprint(want) {
		t.Errorf("fetches = %v, want %v", g.counts, want)
	}
}

func TestCacheExpiry(t *testing.T) {
	tests := []struct {
		name      string
		ttl       time.Duration
		status    int
		advance   time.Duration
		wantFetch int
	}{
		{"fresh", time.Hour, 200, 59 * time.Minute, 1},
		{"expired", time.Hour, 200, time.Hour, 2},
		{"ttl capped at 24h", 48 * time.Hour, 200, MaxTTL, 2},
		{"zero ttl is 24h", 0, 200, MaxTTL - time.Second, 1},
		{"5xx kept briefly", time.Hour, 503, ErrorTTL, 2},
		{"5xx kept until then", time.Hour, 503, ErrorTTL - time.Second, 1},
		{"4xx kept the full ttl", time.Hour, 404, ErrorTTL, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &countingGetter{status: tt.status}
			c := New(g, testUA, tt.ttl)
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			c.now = func() time.Time { return now }
			u := mustURL(t, "http://a.test/x")
			if _, err := c.Check(context.Background(), u); err != nil {
				t.Fatal(err)
			}
			now = now.Add(tt.advance)
			if _, err := c.Check(context.Background(), u); err != nil {
				t.Fatal(err)
			}
			if got := g.total(); got != tt.wantFetch {
				t.Errorf("fetches = %d, want %d", got, tt.wantFetch)
			}
		})
	}
}

func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	g := &countingGetter{}
	c := New(g, testUA, time.Hour)
	c.size = 2
	for _, h := range []string{"a", "b", "a", "c", "a", "b"} { // c evicts b; b comes back
		if _, err := c.Check(context.Background(), mustURL(t, "http://"+h+".test/")); err != nil {
			t.Fatal(err)
		}
	}
	if got := g.counts["http://a.test:80/robots.txt"]; got != 1 {
		t.Errorf("a fetched %d times, want 1 (recently used, kept)", got)
	}
	if got := g.counts["http://b.test:80/robots.txt"]; got != 2 {
		t.Errorf("b fetched %d times, want 2 (evicted)", got)
	}
	if n := c.lru.Len(); n != 2 {
		t.Errorf("cache holds %d hosts, want 2", n)
	}
}

// TestConcurrentChecksShareOneFetch holds the fetch until every checker has either fetched or
// joined the fetch in flight: without sharing, each of them fetches.
func TestConcurrentChecksShareOneFetch(t *testing.T) {
	const checkers = 10
	var fetches, joins atomic.Int64
	arrived := make(chan struct{}, 2*checkers)
	release := make(chan struct{})
	g := getterFunc(func(ctx context.Context, rawURL string, _ int64, _ int) (*httpfetch.Response, error) {
		fetches.Add(1)
		arrived <- struct{}{}
		<-release
		return &httpfetch.Response{Status: 200, Body: []byte("user-agent: *\ndisallow: /no\n")}, nil
	})
	c := New(g, testUA, time.Hour)
	c.onJoin = func() { joins.Add(1); arrived <- struct{}{} }
	var wg sync.WaitGroup
	results := make(chan Decision, checkers)
	for range checkers {
		wg.Go(func() {
			d, err := c.Check(context.Background(), mustURL(t, "http://a.test/no"))
			if err != nil {
				t.Error(err)
			}
			results <- d
		})
	}
	for range checkers {
		<-arrived
	}
	close(release)
	wg.Wait()
	close(results)
	if n := fetches.Load(); n != 1 {
		t.Errorf("fetches = %d (joins %d), want 1", n, joins.Load())
	}
	for d := range results {
		if d.Allowed {
			t.Errorf("a sharing checker got allowed (%s), want disallowed", d.Reason)
		}
	}
}

// TestPrefetch starts a fetch without waiting for it: Prefetch returns while the fetch is held,
// the Check that comes next shares it, and a host already cached is not fetched again.
func TestPrefetch(t *testing.T) {
	var fetches atomic.Int64
	started := make(chan context.Context, 1)
	release := make(chan struct{})
	g := getterFunc(func(ctx context.Context, rawURL string, _ int64, _ int) (*httpfetch.Response, error) {
		fetches.Add(1)
		started <- ctx
		<-release
		return &httpfetch.Response{Status: 200, Body: []byte("user-agent: *\ndisallow: /no\n")}, nil
	})
	c := New(g, testUA, time.Hour)
	type key struct{}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "the crawl's"))
	if err := c.Prefetch(ctx, mustURL(t, "http://a.test/seed")); err != nil { // returns with the fetch held
		t.Fatal(err)
	}
	cancel() // the run's set-up ended: the fetch goes on
	fetchCtx := <-started
	if fetchCtx.Value(key{}) != "the crawl's" || fetchCtx.Err() != nil {
		t.Errorf("the fetch's context: value %v, err %v; want the caller's values and no cancellation", fetchCtx.Value(key{}), fetchCtx.Err())
	}
	checked := make(chan Decision)
	go func() {
		d, err := c.Check(context.Background(), mustURL(t, "http://a.test/no"))
		if err != nil {
			t.Error(err)
		}
		checked <- d
	}()
	close(release)
	if d := <-checked; d.Allowed {
		t.Errorf("Check after Prefetch allowed /no (%s), want the prefetched rules' disallow", d.Reason)
	}
	if err := c.Prefetch(context.Background(), mustURL(t, "http://a.test/other")); err != nil {
		t.Fatal(err)
	}
	if n := fetches.Load(); n != 1 {
		t.Errorf("fetches = %d, want 1: the Check joins the prefetch, and a cached host is not fetched again", n)
	}
	if err := c.Prefetch(context.Background(), mustURL(t, "ftp://a.test/")); err == nil {
		t.Error("Prefetch of an ftp URL succeeded, want an error")
	}
}

func TestCheckCancelled(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	g := getterFunc(func(ctx context.Context, rawURL string, _ int64, _ int) (*httpfetch.Response, error) {
		<-release
		return nil, errors.New("late")
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := New(g, testUA, time.Hour).Check(ctx, mustURL(t, "http://a.test/"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestCheckRejectsBadURL(t *testing.T) {
	c := New(&countingGetter{}, testUA, time.Hour)
	for _, s := range []string{"ftp://a.test/", "/relative", "http:///nohost"} {
		t.Run(s, func(t *testing.T) {
			if _, err := c.Check(context.Background(), mustURL(t, s)); err == nil {
				t.Fatal("Check succeeded, want an error")
			}
		})
	}
}

func TestErrorClasses(t *testing.T) {
	tests := []struct {
		class   errclass.Class
		allowed bool
	}{
		{errclass.Redirect, true},
		{errclass.SSRF, false},
		{errclass.DNS, false},
		{errclass.Connect, false},
		{errclass.Timeout, false},
		{errclass.TLS, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.class), func(t *testing.T) {
			g := getterFunc(func(context.Context, string, int64, int) (*httpfetch.Response, error) {
				return nil, errclass.Errorf(tt.class, "boom")
			})
			d, err := New(g, testUA, time.Hour).Check(context.Background(), mustURL(t, "http://a.test/"))
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed != tt.allowed {
				t.Errorf("allowed = %v (%s), want %v", d.Allowed, d.Reason, tt.allowed)
			}
		})
	}
}
