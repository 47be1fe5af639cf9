package crawlspec

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/scope"
	"github.com/crawlstack/crawlstack/shared/crawl/secretref"
)

const hostsSpec = `version: 1
seeds: [http://127.0.0.1:8080/]
scope: any
max_depth: 2
rate: 1
headers: {accept-language: en}
hosts:
  "127.0.0.1:8081":
    rate: 20
    concurrency: 4
    headers: {accept-language: de, x-shop: yes}
    max_depth: 5
    cookies: {consent: "yes", region: eu}
  "*.example.com":
    max_depth: 0
  "www.example.com":
    rate: 0.1
`

func TestHostRulesOverTheCrawlsSettings(t *testing.T) {
	s, err := Parse([]byte(hostsSpec), Bounds{})
	if err != nil {
		t.Fatal(err)
	}
	// Stored as JSON and read back, as the handlers read it (specstore).
	raw, err := json.Marshal(s.Settings)
	if err != nil {
		t.Fatal(err)
	}
	var back Settings
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	c, err := back.Over(Crawl{HostRPS: 1, Rules: scope.DefaultRules(), UserAgent: "crawlstack/0.1"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		host        string
		rate        float64
		concurrency int
		lang, shop  string
		depth       int
	}{
		{"127.0.0.1:8081", 20, 4, "de", "yes", 5},
		{"127.0.0.1:8080", 1, 2, "", "", 2},
		{"a.example.com", 1, 2, "", "", 0},
		// The first entry that matches counts: *.example.com is before www.example.com.
		{"www.example.com", 1, 2, "", "", 0},
	}
	for _, tc := range cases {
		h := c.HeaderFor(tc.host)
		if got := c.RateFor(tc.host); got != tc.rate {
			t.Errorf("%s: rate %v, want %v", tc.host, got, tc.rate)
		}
		if got := c.ConcurrencyFor(tc.host, 2); got != tc.concurrency {
			t.Errorf("%s: concurrency %v, want %v", tc.host, got, tc.concurrency)
		}
		if h.Get("Accept-Language") != tc.lang || h.Get("X-Shop") != tc.shop {
			t.Errorf("%s: headers %v", tc.host, h)
		}
		if got := c.Rules.DepthFor(tc.host); got != tc.depth {
			t.Errorf("%s: max depth %v, want %v", tc.host, got, tc.depth)
		}
	}
	if got := c.HeaderFor("127.0.0.1:8081").Get("Cookie"); got != "consent=yes; region=eu" {
		t.Errorf("the host's Cookie header %q, want its cookies in file order", got)
	}
	if got := c.HeaderFor("127.0.0.1:8080").Get("Cookie"); got != "" {
		t.Errorf("a host without cookies gets Cookie %q", got)
	}
	seed, _ := url.Parse("http://127.0.0.1:8080/")
	deep, _ := url.Parse("http://127.0.0.1:8081/a")
	if err := c.Rules.Check(seed, deep, 5, time.Now()); err != nil {
		t.Errorf("depth 5 on the deep host: %v", err)
	}
	if err := c.Rules.Check(seed, seed, 3, time.Now()); err == nil {
		t.Error("depth 3 on the crawl's host (max 2) admitted")
	}
}

func TestHostRulesErrorsNameTheirLines(t *testing.T) {
	spec := `version: 1
seeds: [http://127.0.0.1/]
hosts:
  "https://a.example/": {rate: 1}
  b.example:
    rate: 0
    concurrency: 0
    speed: 3
    headers: {user-agent: x}
  c.example:
    headers: {authorization: {secret: "env:X"}}
  d.example: {rate: 9, max_depth: 9, concurrency: 9}
  e.example:
    cookies: {"bad name": x, ok: "semi;colon"}
`
	_, err := Parse([]byte(spec), Bounds{LocalSecrets: true, HostRPS: 5, MaxDepth: depth(4), HostConcurrency: 3})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`line 4: hosts.https://a.example/: "https://a.example/": want a host name or pattern`,
		`line 6: hosts.b.example.rate: 0: want more than 0`,
		`line 7: hosts.b.example.concurrency: 0: want 1 or more`,
		`line 8: hosts.b.example.speed: unknown setting (known: concurrency, cookies, headers, login, max_depth, rate, session, sticky_proxy)`,
		`line 9: hosts.b.example.headers.user-agent: a spec may not set User-Agent`,
		`line 11: hosts.c.example.headers: a host's headers are plain values`,
		`hosts.d.example.rate: 9 is over the stack's bound of 5`,
		`hosts.d.example.max_depth: 9 is over the stack's bound of 4`,
		`hosts.d.example.concurrency: 9 is over the stack's bound of 3`,
		`line 14: hosts.e.example.cookies.bad name: not a cookie name and value`,
		`line 14: hosts.e.example.cookies.ok: not a cookie name and value`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// sticky_proxy keeps its hosts on one proxy, and needs a stack that fetches through proxies.
func TestStickyProxyNeedsProxies(t *testing.T) {
	spec := "version: 1\nseeds: [http://127.0.0.1/]\nhosts:\n  shop.example:\n    sticky_proxy: true\n"
	s, err := Parse([]byte(spec), Bounds{Proxies: true})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Over(Crawl{Rules: scope.DefaultRules(), UserAgent: "crawlstack/0.1"})
	if err != nil {
		t.Fatal(err)
	}
	if !c.StickyProxies() || !c.StickyProxy("shop.example:443") || c.StickyProxy("other.example") {
		t.Errorf("sticky: any %v, shop.example %v, other.example %v; want true, true, false",
			c.StickyProxies(), c.StickyProxy("shop.example:443"), c.StickyProxy("other.example"))
	}
	_, err = Parse([]byte(spec), Bounds{})
	if err == nil || !strings.Contains(err.Error(), "hosts.shop.example.sticky_proxy: this stack fetches through no proxies") {
		t.Errorf("sticky_proxy without proxies: %v", err)
	}
}

// A host's login: read with its secret references, checked as secret headers are (on a stack,
// under its prefixes), and refused where it cannot be sent.
func TestLoginSpec(t *testing.T) {
	good := "version: 1\nseeds: [http://127.0.0.1/]\nhosts:\n  shop.example:\n    login:\n      url: https://shop.example/login\n" +
		"      fields:\n        user: alice\n        password: {secret: \"ssm:/crawlstack/headers/shop\"}\n      expired_body: 'Please log in'\n"
	s, err := Parse([]byte(good), Bounds{Secrets: secretref.Allowed{SSM: "/crawlstack/headers/"}})
	if err != nil {
		t.Fatal(err)
	}
	l := s.Hosts[0].Login
	if l == nil || l.Method != "POST" || len(l.Fields) != 2 || l.Fields[1].Secret != "ssm:/crawlstack/headers/shop" || l.Fields[1].Value != "" {
		t.Fatalf("login = %+v", l)
	}
	c, err := s.Settings.Over(Crawl{Rules: scope.DefaultRules(), UserAgent: "crawlstack/0.1"})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Session("shop.example") || c.Session("other.example") {
		t.Error("a host with a login keeps a session, and only it")
	}
	if _, err := c.LoginFor("shop.example"); err == nil || !strings.Contains(err.Error(), "not read") {
		t.Errorf("LoginFor before its secrets are read: %v, want an error", err)
	}
	bad := []struct{ spec, want string }{
		{"login:\n      fields: {a: b}\n", "a login needs its url"},
		{"login:\n      url: https://elsewhere.example/login\n", "is not a host of shop.example"},
		{"login:\n      url: https://shop.example/login\n      method: PUT\n", "want POST or GET"},
		{"login:\n      url: https://shop.example/login\n      max_logins: 99\n", "over the limit of 20"},
		{"login:\n      url: https://shop.example/login\n      expired_body: '('\n", "not a regular expression"},
		{"login:\n      url: https://shop.example/login\n      fields:\n        password: {secret: \"ssm:/other/pw\"}\n", `not under "/crawlstack/headers/"`},
		{"login:\n      url: https://shop.example/login\n      fields:\n        password: {secret: \"env:PW\"}\n", "read by crawl run only"},
	}
	for _, b := range bad {
		spec := "version: 1\nseeds: [http://127.0.0.1/]\nhosts:\n  shop.example:\n    " + b.spec
		_, err := Parse([]byte(spec), Bounds{Secrets: secretref.Allowed{SSM: "/crawlstack/headers/"}})
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%q: err = %v, want %q", b.spec, err, b.want)
		}
	}
}
