package httpfetch

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
)

// A host's own headers go to that host on every hop of a redirect, and never to the host it
// redirects to; the crawl's headers go to both.
func TestHostHeadersGoToTheirHostOnly(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]http.Header{}
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen["b"] = r.Header.Clone()
		mu.Unlock()
		w.Write([]byte("b"))
	}))
	defer b.Close()
	a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen["a"] = r.Header.Clone()
		mu.Unlock()
		http.Redirect(w, r, b.URL+"/", http.StatusFound)
	}))
	defer a.Close()
	ua, _ := url.Parse(a.URL)
	ub, _ := url.Parse(b.URL)
	rules := map[string]http.Header{
		ua.Host: {"Accept-Language": {"de"}, "X-Only-A": {"a"}},
		ub.Host: {"X-Only-B": {"b"}},
	}
	c := newClient(t, Options{})
	ctx := WithRequest(context.Background(), "", http.Header{"Accept-Language": {"en"}, "X-Crawl": {"all"}})
	ctx = WithHostHeaders(ctx, func(host string) http.Header { return rules[host] })
	resp, err := c.GetFollowing(ctx, a.URL+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Body) != "b" {
		t.Fatalf("body %q: the redirect was not followed", resp.Body)
	}
	mu.Lock()
	defer mu.Unlock()
	checks := []struct {
		host, name, want string
	}{
		{"a", "Accept-Language", "de"}, {"a", "X-Only-A", "a"}, {"a", "X-Only-B", ""}, {"a", "X-Crawl", "all"},
		{"b", "Accept-Language", "en"}, {"b", "X-Only-A", ""}, {"b", "X-Only-B", "b"}, {"b", "X-Crawl", "all"},
		{"b", "User-Agent", testUA},
	}
	for _, ch := range checks {
		if got := seen[ch.host].Get(ch.name); got != ch.want {
			t.Errorf("host %s saw %s %q, want %q", ch.host, ch.name, got, ch.want)
		}
	}
}
