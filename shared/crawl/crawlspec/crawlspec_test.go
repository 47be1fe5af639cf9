package crawlspec

import (
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/scope"
	"github.com/crawlstack/crawlstack/shared/crawl/web/httpfetch"
)

const good = `# a product crawl
version: 1
seeds:
  - https://127.0.0.1:8080/shop
  - http://127.0.0.1:8080/
scope: domain
include: ['/shop/']
exclude: ['\?sort=']
max_depth: 3
max_pages: 500
max_pages_per_host: 200
rate: 0.5
user_agent: "shopbot/1.0 (+https://example.com/bot)"
headers:
  accept-language: en
recrawl: false
extract:
  title: {css: h1}
  price: {css: .price, regexp: '([0-9.]+)'}
  tags: {css: a.tag, attr: href, all: true}
  product: {jsonld: Product}
  og: {opengraph: true}
  description: {meta: description}
`

func TestParseAGoodSpec(t *testing.T) {
	s, err := Parse([]byte(good), Bounds{MaxDepth: depth(16)})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"https://127.0.0.1:8080/shop", "http://127.0.0.1:8080/"}; strings.Join(s.Seeds, " ") != strings.Join(want, " ") {
		t.Errorf("seeds %v, want %v", s.Seeds, want)
	}
	if s.Version != 1 || s.Scope != scope.Domain || *s.MaxDepth != 3 || *s.MaxPages != 500 || *s.MaxPagesPerHost != 200 ||
		*s.Rate != 0.5 || s.UserAgent != "shopbot/1.0 (+https://example.com/bot)" || s.Headers.Get("Accept-Language") != "en" ||
		s.Recrawls() || len(s.Include) != 1 || len(s.Exclude) != 1 {
		t.Errorf("settings %+v", s.Settings)
	}
	var names []string
	for _, f := range s.Extract {
		names = append(names, f.Name)
	}
	if got := strings.Join(names, ","); got != "title,price,tags,product,og,description" {
		t.Errorf("fields in order %s", got)
	}
	if f := s.Extract[2]; f.CSS != "a.tag" || f.Attr != "href" || !f.All {
		t.Errorf("tags field %+v", f)
	}
}

func TestJSONIsASpecToo(t *testing.T) {
	body := `{"version": 1, "seeds": ["http://127.0.0.1/"], "max_depth": 2,
  "extract": {"h": {"css": "h1"}}}`
	s, err := Parse([]byte(body), Bounds{})
	if err != nil {
		t.Fatal(err)
	}
	if *s.MaxDepth != 2 || len(s.Extract) != 1 {
		t.Errorf("spec %+v", s)
	}
	// And a JSON error has its line.
	_, err = Parse([]byte("{\"version\": 1,\n \"seeds\": [\"http://127.0.0.1/\"],\n \"max_depth\": \"two\"}"), Bounds{})
	if !strings.Contains(err.Error(), `line 3: max_depth: want a whole number, got the string "two"`) {
		t.Errorf("error %v", err)
	}
}

// Each bad spec reports its problems with the lines they are on.
func TestBadSpecsSayWhereAndWhat(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		bounds Bounds
		want   []string
	}{
		{"unknown key", "version: 1\nseeds: [http://127.0.0.1/]\nmax_deph: 3\n", Bounds{},
			[]string{"line 3: max_deph: unknown setting (known: exclude, extract, headers, hosts, include, items, keep, max_depth, max_pages, max_pages_per_host, parse, priority, rate, recrawl, render, retry, scope, seeds, sitemaps, tls_fingerprint, user_agent, version)"}},
		{"wrong types", "version: 1\nseeds: http://127.0.0.1/\nmax_pages: many\nrate: fast\nrecrawl: sometimes\n", Bounds{},
			[]string{"line 2: seeds: want a list of at least one URL", "line 3: max_pages: want a whole number, got the string \"many\"",
				"line 4: rate: want requests per second per host", "line 5: recrawl: want true or false"}},
		{"bad values", "version: 2\nseeds:\n  - ftp://127.0.0.1/\n  - http://127.0.0.1/\nscope: planet\nmax_pages: 0\nrate: -1\ninclude: ['[']\n", Bounds{},
			[]string{"line 1: version: schema version 2: this crawler reads version 1", "line 3: seeds: \"ftp://127.0.0.1/\"",
				"line 5: scope: \"planet\": want host, domain or any", "line 6: max_pages: 0: want 1 or more", "line 7: rate: -1: want more than 0",
				"line 8: include: \"[\": error parsing regexp"}},
		{"missing", "scope: host\n", Bounds{},
			[]string{"line 1: version: missing", "line 1: seeds: missing"}},
		{"items", "version: 1\nseeds: [http://127.0.0.1/]\nitems:\n  a: {css: li}\n  b:\n    css: li\n    xpath: //li\n    fields: {x: {css: p}}\n  c:\n    css: li\n    fields:\n      m: {meta: description}\n  d:\n    xpath: //li\n    fields:\n      p: {css: 'p[['}\n",
			Bounds{},
			[]string{"line 4: items.a.fields: want at least one field", "line 6: items.b: want exactly one of css, xpath and json",
				"line 12: items.c.fields.m: a field of an item is css or xpath", "line 16: items.d.fields.p.css: selector \"p[[\""}},
		{"set twice", "version: 1\nseeds: [http://127.0.0.1/]\nrate: 1\nrate: 2\n", Bounds{},
			[]string{"line 4: rate: set twice"}},
		{"headers", "version: 1\nseeds: [http://127.0.0.1/]\nheaders:\n  User-Agent: x\n  Cookie: [a]\n  'bad name': x\n", Bounds{},
			[]string{"line 4: headers.User-Agent: a spec may not set User-Agent: set user_agent instead", "line 5: headers.Cookie: want a string, got a list",
				"line 6: headers.bad name: not a header name"}},
		{"user agent", "version: 1\nseeds: [http://127.0.0.1/]\nuser_agent: '(nothing)'\n", Bounds{},
			[]string{"line 3: user_agent: \"(nothing)\": want a product token first"}},
		{"extraction", "version: 1\nseeds: [http://127.0.0.1/]\nextract:\n  a: {css: 'div[['}\n  b:\n    css: p\n    regexp: '(['\n  c: {css: p, meta: x}\n  d: {xpath: '//p[@'}\n  e: {extractor: nope}\n  f: {css: p, all: yes please}\n",
			Bounds{},
			[]string{"line 4: extract.a.css: selector \"div[[\"", "line 7: extract.b.regexp: \"([\"", "line 8: extract.c: field c: want exactly one of",
				"line 9: extract.d.xpath: expression \"//p[@\"", "line 10: extract.e.extractor: no extractor is registered as \"nope\"",
				"line 11: extract.f.all: want true or false"}},
		{"over the stack's bounds", "version: 1\nseeds: [http://127.0.0.1/]\nmax_depth: 20\nmax_pages: 2000\nmax_pages_per_host: 300\nrate: 5\ninclude: [x]\n",
			Bounds{MaxDepth: depth(16), MaxPages: 1000, MaxPagesPerHost: 200, HostRPS: 2, Include: true},
			[]string{"line 3: max_depth: 20 is over the stack's bound of 16 (CRAWL_MAX_DEPTH, --max-depth)", "line 4: max_pages: 2000 is over the stack's bound of 1000 (CRAWL_MAX_PAGES, --max-pages)",
				"line 5: max_pages_per_host: 300 is over the stack's bound of 200", "line 6: rate: 5 is over the stack's bound of 2 (CRAWL_HOST_RPS, --host-rps)",
				"line 7: include: the stack sets include patterns"}},
		{"tls fingerprint", "version: 1\nseeds: [http://127.0.0.1/]\ntls_fingerprint: firefox\n", Bounds{},
			[]string{"line 3: tls_fingerprint: \"firefox\": want chrome"}},
		{"browser user agent without a browser's fingerprint", "version: 1\nseeds: [http://127.0.0.1/]\nuser_agent: browser\n", Bounds{},
			[]string{"line 3: user_agent: user agent \"browser\": only with the TLS fingerprint \"chrome\""}},
		{"another chrome than the fingerprint's", "version: 1\nseeds: [http://127.0.0.1/]\ntls_fingerprint: chrome\nuser_agent: 'Mozilla/5.0 (X11) Chrome/120.0.0.0 Safari/537.36'\n",
			Bounds{}, []string{"line 4: user_agent: user agent \"Mozilla/5.0 (X11) Chrome/120.0.0.0 Safari/537.36\" names another Chrome"}},
		{"Go's fingerprint under the stack's browser user agent", "version: 1\nseeds: [http://127.0.0.1/]\ntls_fingerprint: go\n",
			Bounds{UserAgent: "browser", Fingerprint: "chrome"}, []string{"line 3: tls_fingerprint: user agent \"browser\": only with"}},
		{"chrome's fingerprint on a stack with proxies", "version: 1\nseeds: [http://127.0.0.1/]\ntls_fingerprint: chrome\n",
			Bounds{Proxies: true}, []string{"line 3: tls_fingerprint: \"chrome\" does not go through the proxies this stack fetches through"}},
		{"priority", "version: 1\nseeds: [http://127.0.0.1/]\npriority:\n  - {pattern: /a/, priority: urgent}\n  - {priority: high}\n  - {pattern: '[', priority: low}\n  - {max_depth: -1, priority: high}\n  - {pattern: /b/, priority: high, weight: 3}\n  - {from: /c/, priority: low}\n",
			Bounds{},
			[]string{"line 4: priority: priority \"urgent\": want high, normal or low", "line 5: priority: no condition",
				"line 6: priority: pattern \"[\"", "line 7: priority.max_depth: -1: want 0 or more", "line 8: priority.weight: unknown setting"}},
		{"keep", "version: 1\nseeds: [http://127.0.0.1/]\nkeep: [application/pdf, 'image/*', Application/JSON, '*/*', 'text/plain; charset=utf-8', pdf]\n", Bounds{},
			[]string{"line 3: keep: \"Application/JSON\": want a media type in lower case", "line 3: keep: \"*/*\"", "line 3: keep: \"text/plain; charset=utf-8\"", "line 3: keep: \"pdf\""}},
		{"json selectors and parse", "version: 1\nseeds: [http://127.0.0.1/]\nparse: [pdf, xml, pdf]\nextract:\n  a: {json: 'products[0]'}\n  b: {json: $.x, attr: href}\nitems:\n  r:\n    json: '$[?'\n    fields: {x: {json: $.x}}\n  s:\n    json: $.p\n    fields: {x: {css: p}}\n",
			Bounds{},
			[]string{"line 3: parse: \"xml\": want one of pdf, json and text", "line 3: parse: \"pdf\": listed twice",
				"line 5: extract.a.json: expression \"products[0]\"", "line 6: extract.b.attr: attr goes with css or xpath",
				"line 9: items.r.json: expression \"$[?\"", "line 13: items.s.fields.x: a field of a json item is json"}},
		{"parse not a list", "version: 1\nseeds: [http://127.0.0.1/]\nparse: pdf\n", Bounds{},
			[]string{"line 3: parse: want a list of kinds such as [pdf, json, text]"}},
		{"priority not a list", "version: 1\nseeds: [http://127.0.0.1/]\npriority: high\n", Bounds{},
			[]string{"line 3: priority: want a list of rules"}},
		{"not a mapping", "- http://127.0.0.1/\n", Bounds{}, []string{"line 1: a spec is a mapping of settings"}},
		{"syntax", "version: 1\nseeds:\n  - http://127.0.0.1/\n bad: indent\n", Bounds{}, []string{"line 3: not YAML or JSON: did not find expected key"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.body), tt.bounds)
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("error %v, want Errors", err)
			}
			if len(es) != len(tt.want) {
				t.Errorf("%d errors, want %d:\n%v", len(es), len(tt.want), err)
			}
			for i, w := range tt.want {
				if i < len(es) && !strings.HasPrefix(es[i].Error(), w) {
					t.Errorf("error %d is %q, want it to start with %q", i, es[i].Error(), w)
				}
			}
		})
	}
}

func TestIsSpec(t *testing.T) {
	tests := []struct {
		name, body string
		want       bool
	}{
		{"crawl.yaml", "", true},
		{"crawl.JSON", "", true},
		{"seeds.txt", "# comment\n\nhttps://example.com/\n", false},
		{"seeds", "\xEF\xBB\xBF# a spec\nversion: 1\n", true},
		{"seeds", "{\"version\":1}", true},
		{"seeds", "---\nversion: 1\n", true},
		{"seeds", "", false},
	}
	for _, tt := range tests {
		if got := IsSpec(tt.name, []byte(tt.body)); got != tt.want {
			t.Errorf("IsSpec(%q, %q) = %v, want %v", tt.name, tt.body, got, tt.want)
		}
	}
}

// Settings stored as JSON and read back give the crawl the spec asked for, over the stack's.
func TestSettingsOverTheStack(t *testing.T) {
	s, err := Parse([]byte(good), Bounds{MaxDepth: depth(16)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(s.Settings)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "127.0.0.1") {
		t.Errorf("the stored settings hold the seeds: %s", b)
	}
	var back Settings
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	base := Crawl{Rules: scope.DefaultRules(), MaxPages: 0, MaxPagesPerHost: 1000, HostRPS: 1, UserAgent: "crawlstack/0.1"}
	base.Rules.Exclude, _ = scope.ParsePatterns([]string{"/private/"})
	c, err := back.Over(base)
	if err != nil {
		t.Fatal(err)
	}
	if c.Rules.Mode != scope.Domain || c.Rules.MaxDepth != 3 || c.MaxPages != 500 || c.MaxPagesPerHost != 200 || c.HostRPS != 0.5 ||
		c.UserAgent != "shopbot/1.0 (+https://example.com/bot)" || c.Header.Get("Accept-Language") != "en" || c.Fields.Len() != 6 || c.Spec == nil {
		t.Errorf("crawl %+v", c)
	}
	// The stack's exclude pattern still applies, with the spec's; its include is the spec's.
	seed, _ := url.Parse("http://127.0.0.1/shop/")
	for u, ok := range map[string]bool{"http://127.0.0.1/shop/a": true, "http://127.0.0.1/private/shop/": false,
		"http://127.0.0.1/shop/?sort=1": false, "http://127.0.0.1/blog/": false} {
		p, _ := url.Parse(u)
		if err := c.Rules.Check(seed, p, 1, time.Now()); (err == nil) != ok {
			t.Errorf("%s: %v, want admitted %v", u, err, ok)
		}
	}
	if len(base.Rules.Exclude) != 1 {
		t.Errorf("Over changed the base's patterns: %v", base.Rules.Exclude)
	}
	// A browser's fingerprint and User-Agent, asked for together, agree; Go's own over the stack's
	// browser fingerprint keeps the crawler's User-Agent.
	for _, tt := range []struct{ spec, stackFP, wantFP, wantUA string }{
		{"tls_fingerprint: chrome\nuser_agent: browser\n", "", httpfetch.FingerprintChrome, httpfetch.ChromeUserAgent},
		{"tls_fingerprint: go\n", httpfetch.FingerprintChrome, httpfetch.FingerprintGo, "crawlstack/0.1"},
		{"user_agent: browser\n", httpfetch.FingerprintChrome, httpfetch.FingerprintChrome, httpfetch.ChromeUserAgent},
	} {
		sp, err := Parse([]byte("version: 1\nseeds: [http://127.0.0.1/]\n"+tt.spec), Bounds{UserAgent: "crawlstack/0.1", Fingerprint: tt.stackFP})
		if err != nil {
			t.Fatalf("%q: %v", tt.spec, err)
		}
		stack := base
		stack.Fingerprint = tt.stackFP
		c, err := sp.Over(stack)
		if err != nil || c.Fingerprint != tt.wantFP || c.UserAgent != tt.wantUA {
			t.Errorf("%q over the stack's fingerprint %q: %v; want fingerprint %q and User-Agent %q", tt.spec, tt.stackFP, err, tt.wantFP, tt.wantUA)
		}
	}
	// No spec: the stack's settings.
	var none *Settings
	if c, err := none.Over(base); err != nil || c.Spec != nil || c.HostRPS != 1 || !none.Recrawls() {
		t.Errorf("no spec: %+v, %v", c, err)
	}
}

func depth(n int) *int { return &n }
