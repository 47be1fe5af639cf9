package robots

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/web/httpfetch"
)

// heldBody has groups for two agents, wildcards, $ and an Allow that wins a tie.
const heldBody = "User-agent: *\nDisallow: /search\nDisallow: /*.pdf$\nAllow: /search/help\n\n" +
	"User-agent: otherbot\nDisallow: /\n\nUser-agent: crawlstack\nDisallow: /private\nAllow: /private/open\nDisallow: /drafts/\n"

// TestHeldRulesDecideAsCheck: the rules held for a host, matched elsewhere, give Check's answer for
// every URL of the host, for the cache's own product token and for a crawl's User-Agent.
func TestHeldRulesDecideAsCheck(t *testing.T) {
	paths := []string{"/", "/search", "/search?q=x", "/search/help", "/a.pdf", "/a.pdf?x=1", "/private", "/private/open/x",
		"/drafts/x", "/drafts", "/robots.txt", "/Search", "/%73earch"}
	for _, ua := range []string{"", "otherbot/2.0", "crawlstack/9 (+x)", "nobody"} {
		c := New(staticGetter(200, heldBody), testUA, time.Hour)
		ctx := context.Background()
		if ua != "" {
			ctx = WithUserAgent(ctx, ua)
		}
		base := "http://site.test:8080"
		if _, err := c.Check(ctx, mustURL(t, base+"/")); err != nil { // reads the robots.txt
			t.Fatal(err)
		}
		h, ok := c.Held(ctx, mustURL(t, base+"/x"), 1<<10)
		if !ok {
			t.Fatalf("ua %q: the rules read are not held", ua)
		}
		if h.Host != "http://site.test:8080" {
			t.Errorf("host = %q", h.Host)
		}
		disallowed := 0
		for _, p := range paths {
			u := mustURL(t, base+p)
			d, err := c.Check(ctx, u)
			if err != nil {
				t.Fatal(err)
			}
			allowed, applies := h.Allows(u)
			if !applies || allowed != d.Allowed {
				t.Errorf("ua %q %s: held allows %v (applies %v), Check %v (%s)", ua, p, allowed, applies, d.Allowed, d.Reason)
			}
			if !d.Allowed {
				disallowed++
			}
		}
		if disallowed == 0 {
			t.Errorf("ua %q: no path disallowed: the comparison proves nothing", ua)
		}
		for _, other := range []string{"http://site.test/search", "https://site.test:8080/search", "http://other.test:8080/search"} {
			if allowed, applies := h.Allows(mustURL(t, other)); applies || !allowed {
				t.Errorf("%s: rules of another host applied (allowed %v)", other, allowed)
			}
		}
	}
}

// TestOnlyRulesReadAreHeld: a robots.txt that could not be read, that allows all, that is too
// long to carry, or whose entry expired is not held, so nothing is refused early for its host.
func TestOnlyRulesReadAreHeld(t *testing.T) {
	long := "User-agent: *\nDisallow: /search\n" + strings.Repeat("# padding\n", 200)
	tests := []struct {
		name string
		get  Getter
		max  int
		want bool
	}{
		{"200 held", staticGetter(200, heldBody), 1 << 10, true},
		{"200 over the size asked for", staticGetter(200, long), 1 << 10, false},
		{"404 allows all", staticGetter(404, heldBody), 1 << 10, false},
		{"500 disallows for a while", staticGetter(500, heldBody), 1 << 10, false},
		{"429 disallows for a while", staticGetter(429, heldBody), 1 << 10, false},
		{"unreachable", getterFunc(func(context.Context, string, int64, int) (*httpfetch.Response, error) {
			return nil, errclass.Errorf(errclass.Timeout, "dial: %w", errors.New("timed out"))
		}), 1 << 10, false},
		{"guard refused", getterFunc(func(context.Context, string, int64, int) (*httpfetch.Response, error) {
			return nil, errclass.Errorf(errclass.SSRF, "private address")
		}), 1 << 10, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(tt.get, testUA, time.Hour)
			u := mustURL(t, "http://site.test/x")
			if _, ok := c.Held(context.Background(), u, tt.max); ok {
				t.Fatal("held before any check read the robots.txt")
			}
			if _, err := c.Check(context.Background(), u); err != nil {
				t.Fatal(err)
			}
			if _, ok := c.Held(context.Background(), u, tt.max); ok != tt.want {
				t.Errorf("held = %v, want %v", ok, tt.want)
			}
		})
	}
	t.Run("expired", func(t *testing.T) {
		now := time.Unix(1e9, 0)
		c := New(staticGetter(200, heldBody), testUA, time.Hour)
		c.now = func() time.Time { return now }
		u := mustURL(t, "http://site.test/x")
		if _, err := c.Check(context.Background(), u); err != nil {
			t.Fatal(err)
		}
		if _, ok := c.Held(context.Background(), u, 1<<10); !ok {
			t.Fatal("not held while fresh")
		}
		now = now.Add(time.Hour)
		if _, ok := c.Held(context.Background(), u, 1<<10); ok {
			t.Error("held after its entry expired")
		}
	})
}

// staticGetter answers every robots.txt with status and body.
func staticGetter(status int, body string) Getter {
	return getterFunc(func(context.Context, string, int64, int) (*httpfetch.Response, error) {
		return &httpfetch.Response{Status: status, Body: []byte(body)}, nil
	})
}
