package robots

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestConformance runs cases from Google's robotstxt tests (robots_test.cc) and RFC 9309 through
// parse and decide, without I/O.
func TestConformance(t *testing.T) {
	const limitFiller = "# " // comment lines used to push rules past MaxBytes
	pastLimit := "user-agent: FooBot\ndisallow: /early\n" +
		strings.Repeat(limitFiller+strings.Repeat("x", 97)+"\n", MaxBytes/100-1) +
		"disallow: /before\n" + strings.Repeat("#", 200) + "\ndisallow: /after\n"
	tests := []struct {
		name  string
		body  string
		agent string
		url   string
		want  bool
	}{
		{"empty file allows", "", "FooBot", "http://foo.bar/x/y", true},
		{"line syntax", "user-agent: FooBot\ndisallow: /\n", "FooBot", "http://foo.bar/x/y", false},
		{"missing colon accepted", "user-agent FooBot\ndisallow /\n", "FooBot", "http://foo.bar/x/y", false},
		{"unknown keys ignored", "foo: FooBot\nbar: /\n", "FooBot", "http://foo.bar/x/y", true},
		{"other agent's group", "user-agent: BarBot\ndisallow: /\n", "FooBot", "http://foo.bar/x/y", true},
		{"product token case-insensitive", "USER-AGENT: FOOBOT\nDISALLOW: /\n", "foobot", "http://foo.bar/x/y", false},
		{"agent line takes the product token", "user-agent: FooBot/1.0 (+http://x)\ndisallow: /\n", "FooBot", "http://foo.bar/x", false},
		{"global group applies", "user-agent: *\ndisallow: /x/\n", "FooBot", "http://foo.bar/x/y", false},
		{"specific group wins over global", "user-agent: *\ndisallow: /\nuser-agent: FooBot\nallow: /\n", "FooBot", "http://foo.bar/x/y", true},
		{"global still applies to others", "user-agent: *\nallow: /\nuser-agent: FooBot\ndisallow: /\n", "BarBot", "http://foo.bar/x/y", true},
		{"rules before any agent ignored", "allow: /foo/bar/\nuser-agent: FooBot\ndisallow: /\nallow: /x/\n", "FooBot", "http://foo.bar/foo/bar/", false},
		{"multiple agents in a group", "user-agent: BazBot\nuser-agent: FooBot\nallow: /z/\ndisallow: /\n", "FooBot", "http://foo.bar/z/d", true},
		{"groups merge a", "user-agent: FooBot\ndisallow: /a\n\nuser-agent: BarBot\ndisallow: /b\n\nuser-agent: FooBot\ndisallow: /c\n", "FooBot", "http://foo.bar/a", false},
		{"groups merge c", "user-agent: FooBot\ndisallow: /a\n\nuser-agent: BarBot\ndisallow: /b\n\nuser-agent: FooBot\ndisallow: /c\n", "FooBot", "http://foo.bar/c", false},
		{"groups merge not b", "user-agent: FooBot\ndisallow: /a\n\nuser-agent: BarBot\ndisallow: /b\n\nuser-agent: FooBot\ndisallow: /c\n", "FooBot", "http://foo.bar/b", true},
		{"paths case-sensitive", "user-agent: FooBot\ndisallow: /X/\n", "FooBot", "http://foo.bar/x/y", true},
		{"paths case-sensitive match", "user-agent: FooBot\ndisallow: /X/\n", "FooBot", "http://foo.bar/X/y", false},
		{"longest match wins", "user-agent: FooBot\nallow: /page\ndisallow: /*.html\n", "FooBot", "http://foo.bar/page.html", false},
		{"longest match wins allow", "user-agent: FooBot\nallow: /x/page.\ndisallow: /*.html\n", "FooBot", "http://foo.bar/x/page.html", true},
		{"allow wins a tie", "user-agent: FooBot\ndisallow: /folder\nallow: /folder\n", "FooBot", "http://foo.bar/folder/page", true},
		{"allow wins a tie, rule order reversed", "user-agent: FooBot\nallow: /x/page.html\ndisallow: /x/page.html\n", "FooBot", "http://foo.bar/x/page.html", true},
		{"empty rules allow", "user-agent: FooBot\nallow:\ndisallow:\n", "FooBot", "http://foo.bar/x", true},
		{"dollar anchors the end", "user-agent: FooBot\ndisallow: /\nallow: /$\n", "FooBot", "http://foo.bar/", true},
		{"dollar anchors the end, longer path", "user-agent: FooBot\ndisallow: /\nallow: /$\n", "FooBot", "http://foo.bar/page.html", false},
		{"star and dollar", "user-agent: FooBot\ndisallow: /*.gif$\n", "FooBot", "http://foo.bar/img/a.gif", false},
		{"dollar with query", "user-agent: FooBot\ndisallow: /*.gif$\n", "FooBot", "http://foo.bar/a.gif?x=1", true},
		{"prefix match", "user-agent: FooBot\ndisallow: /fish\n", "FooBot", "http://foo.bar/fishheads/yummy.html", false},
		{"trailing star is a prefix", "user-agent: FooBot\ndisallow: /fish*\n", "FooBot", "http://foo.bar/fish.php?id=anything", false},
		{"star in the middle", "user-agent: FooBot\ndisallow: /*/private/\n", "FooBot", "http://foo.bar/a/b/private/x", false},
		{"query is part of the path", "user-agent: FooBot\ndisallow: /foo/bar?qux=taz&baz=http://foo.bar?tar&par\n", "FooBot", "http://foo.bar/foo/bar?qux=taz&baz=http://foo.bar?tar&par", false},
		{"utf-8 rule matches its percent-encoding", "user-agent: FooBot\ndisallow: /foo/bar/ツ\n", "FooBot", "http://foo.bar/foo/bar/%E3%83%84", false},
		{"encoded rule matches encoded url", "user-agent: FooBot\ndisallow: /foo/bar/%E3%83%84\n", "FooBot", "http://foo.bar/foo/bar/%E3%83%84", false},
		{"unreserved escapes are not decoded", "user-agent: FooBot\ndisallow: /foo/bar/%62%61%7A\n", "FooBot", "http://foo.bar/foo/bar/baz", true},
		{"unreserved escapes match literally", "user-agent: FooBot\ndisallow: /foo/bar/%62%61%7A\n", "FooBot", "http://foo.bar/foo/bar/%62%61%7A", false},
		{"byte order mark", "\xEF\xBB\xBFuser-agent: FooBot\ndisallow: /foo\n", "FooBot", "http://foo.bar/foo", false},
		{"CRLF lines", "user-agent: FooBot\r\ndisallow: /foo\r\nallow: /foo/ok\r\n", "FooBot", "http://foo.bar/foo/x", false},
		{"CRLF lines allow", "user-agent: FooBot\r\ndisallow: /foo\r\nallow: /foo/ok\r\n", "FooBot", "http://foo.bar/foo/ok", true},
		{"CR lines", "user-agent: FooBot\rdisallow: /foo\rallow: /foo/ok\r", "FooBot", "http://foo.bar/foo/x", false},
		{"CR lines allow", "user-agent: FooBot\rdisallow: /foo\rallow: /foo/ok\r", "FooBot", "http://foo.bar/foo/ok", true},
		{"mixed line endings", "user-agent: FooBot\ndisallow: /a\r\ndisallow: /b\rdisallow: /c\n", "FooBot", "http://foo.bar/c", false},
		{"comments", "user-agent: FooBot # the bot\ndisallow: /a # secret\n", "FooBot", "http://foo.bar/a", false},
		{"rules early in a big file apply", pastLimit, "FooBot", "http://foo.bar/early", false},
		{"rules just before 500 KiB apply", pastLimit, "FooBot", "http://foo.bar/before", false},
		{"rules after 500 KiB are ignored", pastLimit, "FooBot", "http://foo.bar/after", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := url.Parse(tt.url)
			if err != nil {
				t.Fatal(err)
			}
			if tt.body == pastLimit && !(strings.Index(pastLimit, "/before") < MaxBytes && strings.Index(pastLimit, "/after") > MaxBytes) {
				t.Fatalf("fixture: /before at %d and /after at %d, want either side of %d",
					strings.Index(pastLimit, "/before"), strings.Index(pastLimit, "/after"), MaxBytes)
			}
			d := parse([]byte(tt.body), tt.agent).decide(tt.agent, u)
			if d.Allowed != tt.want {
				t.Errorf("allowed = %v (%s), want %v", d.Allowed, d.Reason, tt.want)
			}
		})
	}
}

func TestCrawlDelay(t *testing.T) {
	tests := []struct {
		name string
		body string
		want time.Duration
	}{
		{"none", "user-agent: *\ndisallow: /x\n", 0},
		{"global", "user-agent: *\ncrawl-delay: 3\n", 3 * time.Second},
		{"fraction", "user-agent: *\ncrawl-delay: 0.5\n", 500 * time.Millisecond},
		{"clamped", "user-agent: *\ncrawl-delay: 3600\n", MaxCrawlDelay},
		{"our group", "user-agent: crawlstack\ncrawl-delay: 7\n\nuser-agent: *\ncrawl-delay: 2\n", 7 * time.Second},
		{"other group only", "user-agent: otherbot\ncrawl-delay: 7\n", 0},
		{"unparseable ignored", "user-agent: *\ncrawl-delay: soon\n", 0},
	}
	u, _ := url.Parse("http://foo.bar/")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := parse([]byte(tt.body), "crawlstack").decide("crawlstack", u)
			if d.CrawlDelay != tt.want {
				t.Errorf("CrawlDelay = %v, want %v", d.CrawlDelay, tt.want)
			}
		})
	}
}

func TestProductToken(t *testing.T) {
	tests := []struct{ ua, want string }{
		{"crawlstack/0.1 (+https://example.com/bot)", "crawlstack"},
		{"crawlstack", "crawlstack"},
		{"  my_bot-2 more", "my_bot-2"},
		{"Mozilla/5.0 (compatible; Googlebot/2.1)", "Mozilla"},
	}
	for _, tt := range tests {
		t.Run(tt.ua, func(t *testing.T) {
			if got := ProductToken(tt.ua); got != tt.want {
				t.Errorf("ProductToken(%q) = %q, want %q", tt.ua, got, tt.want)
			}
		})
	}
}
