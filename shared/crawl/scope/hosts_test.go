package scope_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/scope"
)

func TestHostPatternMatch(t *testing.T) {
	cases := []struct {
		pattern, host string
		want          bool
	}{
		{"shop.example.com", "shop.example.com", true},
		{"shop.example.com", "SHOP.example.com:8443", true},
		{"shop.example.com", "example.com", false},
		{"*.example.com", "a.b.example.com", true},
		{"*.example.com", "example.com", false},
		{"*.example.com", "badexample.com", false},
		{"127.0.0.1:8080", "127.0.0.1:8080", true},
		{"127.0.0.1:8080", "127.0.0.1:8081", false},
		{"127.0.0.1:8080", "127.0.0.1", false},
		{"127.0.0.1", "127.0.0.1:9", true},
		{"[::1]:8080", "[::1]:8080", true},
	}
	for _, c := range cases {
		p, err := scope.ParseHostPattern(c.pattern)
		if err != nil {
			t.Fatalf("ParseHostPattern(%q): %v", c.pattern, err)
		}
		if got := p.Match(c.host); got != c.want {
			t.Errorf("%q.Match(%q) = %v, want %v", c.pattern, c.host, got, c.want)
		}
	}
}

func TestParseHostPatternRefusesWhatIsNoHost(t *testing.T) {
	for _, bad := range []string{"", "  ", "https://example.com", "example.com/shop", "user@example.com", "[a-"} {
		if _, err := scope.ParseHostPattern(bad); err == nil {
			t.Errorf("ParseHostPattern(%q): no error", bad)
		}
	}
}

func TestHostDepthsBoundTheirHostsOnly(t *testing.T) {
	r := scope.Rules{Mode: scope.Any, MaxDepth: 1, HostDepths: []scope.HostDepth{
		{Pattern: "deep.example", MaxDepth: 3},
		{Pattern: "*.example", MaxDepth: 0},
	}}
	seed, _ := url.Parse("https://seed.example/")
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		u     string
		depth int
		ok    bool
	}{
		{"https://deep.example/a", 3, true},
		{"https://deep.example/a", 4, false},
		{"https://shallow.example/a", 1, false}, // *.example: 0
		{"https://other.org/a", 1, true},        // the crawl's 1
		{"https://other.org/a", 2, false},
	}
	for _, c := range cases {
		u, _ := url.Parse(c.u)
		err := r.Check(seed, u, c.depth, now)
		if (err == nil) != c.ok {
			t.Errorf("Check(%s, depth %d) = %v, want ok %v", c.u, c.depth, err, c.ok)
		}
	}
	if got := r.Deepest(); got != 3 {
		t.Errorf("Deepest = %d, want 3", got)
	}
	r.HostDepths = append(r.HostDepths, scope.HostDepth{Pattern: "x.org", MaxDepth: -1})
	if got := r.Deepest(); got != -1 {
		t.Errorf("Deepest with an unbounded host = %d, want -1", got)
	}
}
