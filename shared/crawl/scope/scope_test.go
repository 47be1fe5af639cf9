package scope

import (
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestParseMode(t *testing.T) {
	tests := []struct {
		in      string
		want    Mode
		wantErr bool
	}{
		{"", Host, false}, {"host", Host, false}, {" Domain ", Domain, false}, {"ANY", Any, false},
		{"site", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseMode(tt.in)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("ParseMode(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestParsePatterns(t *testing.T) {
	res, err := ParsePatterns([]string{`/blog/`, " ", `\.pdf$`})
	if err != nil || len(res) != 2 {
		t.Fatalf("ParsePatterns = %v, %v; want 2 patterns", res, err)
	}
	_, err = ParsePatterns([]string{`ok`, `a(b`})
	if err == nil || !strings.Contains(err.Error(), `"a(b"`) || !strings.Contains(err.Error(), "pattern 2") {
		t.Errorf("ParsePatterns with a bad pattern: error %v, want one naming pattern 2 \"a(b\"", err)
	}
}

func TestCheck(t *testing.T) {
	seed := "http://www.example.co.uk/start"
	withPatterns := DefaultRules()
	withPatterns.Include = []*regexp.Regexp{regexp.MustCompile(`/blog/`), regexp.MustCompile(`/news/`)}
	withPatterns.Exclude = []*regexp.Regexp{regexp.MustCompile(`\?print=1`)}
	domain := DefaultRules()
	domain.Mode = Domain
	any := DefaultRules()
	any.Mode = Any
	unlimited := DefaultRules()
	unlimited.MaxDepth = -1
	noTraps := DefaultRules()
	noTraps.Traps = TrapRules{}
	tests := []struct {
		name  string
		rules Rules
		seed  string
		url   string
		depth int
		want  errclass.Class // "" admits
		msg   string         // part of the error message
	}{
		{"seed itself", DefaultRules(), seed, seed, 0, "", ""},
		{"same host", DefaultRules(), seed, "https://www.example.co.uk/a", 1, "", ""},
		{"other host", DefaultRules(), seed, "http://shop.example.co.uk/a", 1, errclass.Scope, "host"},
		{"other port", DefaultRules(), seed, "http://www.example.co.uk:8080/a", 1, errclass.Scope, "host"},
		{"domain same site", domain, seed, "http://shop.example.co.uk/a", 1, "", ""},
		{"domain other site", domain, seed, "http://other.co.uk/a", 1, errclass.Scope, "domain"},
		{"domain ip", domain, "http://127.0.0.1:8080/", "http://127.0.0.2:8080/", 1, errclass.Scope, "domain"},
		{"domain same ip", domain, "http://127.0.0.1:8080/", "http://127.0.0.1:9090/", 1, "", ""},
		{"any", any, seed, "http://elsewhere.org/", 1, "", ""},
		{"depth at max", DefaultRules(), seed, seed, 16, "", ""},
		{"depth over max", DefaultRules(), seed, seed, 17, errclass.Scope, "depth"},
		{"no depth limit", unlimited, seed, seed, 1000, "", ""},
		{"include match", withPatterns, seed, "http://www.example.co.uk/blog/x", 1, "", ""},
		{"include second", withPatterns, seed, "http://www.example.co.uk/news/x", 1, "", ""},
		{"include miss", withPatterns, seed, "http://www.example.co.uk/shop/x", 1, errclass.Scope, "include"},
		{"exclude", withPatterns, seed, "http://www.example.co.uk/blog/x?print=1", 1, errclass.Scope, "exclude"},
		{"seed excluded", withPatterns, "http://www.example.co.uk/blog/?print=1", "http://www.example.co.uk/blog/?print=1", 0, errclass.Scope, "exclude"},
		{"seed trap", DefaultRules(), "http://a.example/x/x/x/x", "http://a.example/x/x/x/x", 0, errclass.Trap, "repeated"},
		{"traps off", noTraps, seed, "http://www.example.co.uk/x/x/x/x/x", 1, "", ""},
		{"unknown mode", Rules{Mode: "galaxy", MaxDepth: 1}, seed, seed, 0, errclass.Scope, "mode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.rules.Check(mustURL(t, tt.seed), mustURL(t, tt.url), tt.depth, now)
			if got := errclass.Of(err); got != tt.want {
				t.Fatalf("Check(%s) = %v (class %q), want class %q", tt.url, err, got, tt.want)
			}
			if err != nil && !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("Check(%s) = %v, want a message with %q", tt.url, err, tt.msg)
			}
		})
	}
}

func TestTraps(t *testing.T) {
	manyParams := "http://a.example/?" + strings.TrimSuffix(strings.Repeat("p=1&", 25), "&")
	tests := []struct {
		name, url string
		trap      bool
		msg       string
	}{
		{"ordinary", "http://a.example/products/shoes?color=red&size=42", false, ""},
		{"deep but fine", "http://a.example/" + strings.Repeat("s/", 3) + "a/b/c/d/e/f/g", false, ""},
		{"too many segments", "http://a.example/" + strings.Repeat("a/b/c/d/e/f/g/h/i/", 4), true, "segments"},
		{"repeated segment", "http://a.example/x/x/x/x", true, "repeated"},
		{"loop", "http://a.example/a/b/a/b/a/b/a/b", true, "repeated"},
		{"three repeats fine", "http://a.example/a/b/a/b/a/b", false, ""},
		{"many params", manyParams, true, "query parameters"},
		{"long url", "http://a.example/" + strings.Repeat("z", 1600), true, "bytes"},
		{"this month", "http://a.example/calendar/2026/11/", false, ""},
		{"old archive", "http://a.example/blog/1999/05/post", false, ""},
		{"far future path", "http://a.example/calendar/2031/01/", true, "ahead"},
		{"far past path", "http://a.example/calendar/1901/01/", true, "back"},
		{"future date query", "http://a.example/cal?date=2040-02-01", true, "ahead"},
		{"compact date", "http://a.example/cal?d=20400201", true, "ahead"},
		{"year param", "http://a.example/cal?year=2099&month=1", true, "ahead"},
		{"near future year param", "http://a.example/cal?year=2028&month=1", false, ""},
		{"product id not a date", "http://a.example/item/20991399", false, ""},
		{"number not a year", "http://a.example/img/3000/12", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := DefaultTraps().Check(mustURL(t, tt.url), now)
			if got := errclass.Of(err) == errclass.Trap; got != tt.trap {
				t.Fatalf("Check(%s) = %v, want trap %v", tt.url, err, tt.trap)
			}
			if err != nil && !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("Check(%s) = %v, want a message with %q", tt.url, err, tt.msg)
			}
		})
	}
}
