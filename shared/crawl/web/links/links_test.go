package links

import (
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
)

var page = mustURL("http://example.com/dir/page.html")

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

func encode(t *testing.T, e encoding.Encoding, s string) []byte {
	t.Helper()
	b, err := e.NewEncoder().Bytes([]byte(s))
	if err != nil {
		t.Fatalf("encode %q: %v", s, err)
	}
	return b
}

func TestExtract(t *testing.T) {
	tests := []struct {
		name string
		body string
		opts Options
		want Page
	}{
		{
			name: "links resolved and deduplicated",
			body: `<html><head><title>  Hello
				World </title></head><body><a href="a.html">A</a> <a href="/b#x">B</a>
				<a href="a.html#again">A2</a><area href="http://Other.example:80/m"><a>no href</a>
				<a href="javascript:void(0)">js</a><a href="mailto:x@example.com">m</a></body></html>`,
			want: Page{Title: "Hello World", Charset: "utf-8", Skipped: 2, Links: []Link{
				{URL: "http://example.com/dir/a.html", Source: "a"},
				{URL: "http://example.com/b", Source: "a"},
				{URL: "http://other.example/m", Source: "area"},
			}},
		},
		{
			name: "base href first one only",
			body: `<head><base href="http://cdn.example/root/"><base href="http://ignored.example/"></head>
				<a href="x">x</a>`,
			want: Page{Charset: "utf-8", Links: []Link{{URL: "http://cdn.example/root/x", Source: "a"}}},
		},
		{
			name: "relative base",
			body: `<base href="../other/"><a href="x">x</a>`,
			want: Page{Charset: "utf-8", Links: []Link{{URL: "http://example.com/other/x", Source: "a"}}},
		},
		{
			name: "nofollow",
			body: `<a href="/n" rel="NoFollow noopener">n</a><a href="/f" rel="nofollow">f</a><a href="/f">f again</a>`,
			want: Page{Charset: "utf-8", Links: []Link{
				{URL: "http://example.com/n", NoFollow: true, Source: "a"},
				{URL: "http://example.com/f", Source: "a"},
			}},
		},
		{
			name: "canonical",
			body: `<link rel="stylesheet" href="/s.css"><link rel="canonical" href="/canon?b=1&amp;a=2"><link rel="canonical" href="/second">`,
			want: Page{Charset: "utf-8", Canonical: "http://example.com/canon?b=1&a=2", Links: []Link{
				{URL: "http://example.com/canon?b=1&a=2", Source: "canonical"},
				{URL: "http://example.com/second", Source: "canonical"},
			}},
		},
		{
			name: "meta refresh",
			body: `<meta http-equiv="Refresh" content="5; URL='/next page'"><meta http-equiv="refresh" content="0;url=/second">`,
			want: Page{Charset: "utf-8", Links: []Link{{URL: "http://example.com/next%20page", Source: "refresh"}}},
		},
		{
			name: "meta robots",
			body: `<meta name="ROBOTS" content="noindex, follow">`,
			want: Page{Charset: "utf-8", NoIndex: true},
		},
		{
			name: "meta robots none",
			body: `<meta name="robots" content="none">`,
			want: Page{Charset: "utf-8", NoIndex: true, NoFollow: true},
		},
		{
			name: "meta for our token",
			body: `<meta name="CrawlStack" content="nofollow"><meta name="otherbot" content="noindex">`,
			opts: Options{UserAgentToken: "crawlstack"},
			want: Page{Charset: "utf-8", NoFollow: true},
		},
		{
			name: "links cap",
			body: `<a href="/1"></a><a href="/2"></a><a href="/1"></a><a href="/3"></a>`,
			opts: Options{MaxLinks: 2},
			want: Page{Charset: "utf-8", Truncated: true, Links: []Link{
				{URL: "http://example.com/1", Source: "a"},
				{URL: "http://example.com/2", Source: "a"},
			}},
		},
		{
			name: "title cut at a rune boundary",
			body: `<title>ééé</title><title>second</title>`,
			opts: Options{MaxTitleBytes: 5},
			want: Page{Charset: "utf-8", Title: "éé"},
		},
		{
			name: "non-ascii href",
			body: `<a href="/страница?q=ü">x</a>`,
			want: Page{Charset: "utf-8", Links: []Link{
				{URL: "http://example.com/%D1%81%D1%82%D1%80%D0%B0%D0%BD%D0%B8%D1%86%D0%B0?q=%C3%BC", Source: "a"},
			}},
		},
		{
			name: "links in script are not links",
			body: `<script>var s = '<a href="/no">';</script><a href="/yes">`,
			want: Page{Charset: "utf-8", Links: []Link{{URL: "http://example.com/yes", Source: "a"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Extract([]byte(tt.body), "text/html; charset=utf-8", page, tt.opts)
			if err != nil {
				t.Fatalf("Extract: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Extract =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func TestExtractCharsets(t *testing.T) {
	const ru = "Привет, мир"
	const ja = "こんにちは世界"
	ruLink := "http://example.com/%D0%BC%D0%B8%D1%80?q=%D0%BF"
	jaLink := "http://example.com/%E4%B8%96%E7%95%8C"
	tests := []struct {
		name, contentType string
		body              []byte
		charset, title    string
		link              string
	}{
		{"windows-1251 by header", "text/html; charset=windows-1251",
			encode(t, charmap.Windows1251, `<title>`+ru+`</title><a href="/мир?q=п">`), "windows-1251", ru, ruLink},
		{"windows-1251 by meta charset", "text/html",
			encode(t, charmap.Windows1251, `<meta charset="windows-1251"><title>`+ru+`</title><a href="/мир?q=п">`), "windows-1251", ru, ruLink},
		{"shift_jis by header", "text/html; charset=Shift_JIS",
			encode(t, japanese.ShiftJIS, `<title>`+ja+`</title><a href="/世界">`), "shift_jis", ja, jaLink},
		{"shift_jis by meta http-equiv", "",
			encode(t, japanese.ShiftJIS, `<meta http-equiv="Content-Type" content="text/html; charset=shift_jis"><title>`+ja+`</title><a href="/世界">`), "shift_jis", ja, jaLink},
		{"header wins over meta", "text/html; charset=utf-8",
			[]byte(`<meta charset="windows-1251"><title>` + ru + `</title><a href="/мир?q=п">`), "utf-8", ru, ruLink},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Extract(tt.body, tt.contentType, page, Options{})
			if err != nil {
				t.Fatalf("Extract: %v", err)
			}
			if got.Charset != tt.charset || got.Title != tt.title {
				t.Errorf("charset %q, title %q; want %q, %q", got.Charset, got.Title, tt.charset, tt.title)
			}
			if len(got.Links) != 1 || got.Links[0].URL != tt.link {
				t.Errorf("links %+v, want one link %s", got.Links, tt.link)
			}
		})
	}
}

func TestExtractErrors(t *testing.T) {
	tests := []struct {
		name, contentType string
		page              *url.URL
		want              errclass.Class
	}{
		{"not html", "image/png", page, errclass.Type},
		{"json", "application/json; charset=utf-8", page, errclass.Type},
		{"nil page url", "text/html", nil, errclass.Parse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Extract([]byte("<a href=x>"), tt.contentType, tt.page, Options{})
			if got := errclass.Of(err); got != tt.want {
				t.Errorf("Extract error %v has class %q, want %q", err, got, tt.want)
			}
		})
	}
}

func TestExtractHostile(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		links int
	}{
		{"unclosed tags", `<a href="/1"><div><span><a href="/2"<title>x`, 2},
		{"unclosed attribute", `<a href="/1">x</a><a href="/2`, 1},
		{"huge attribute", `<a title="` + strings.Repeat("x", 1<<20) + `" href="/big">x</a>`, 1},
		{"huge href", `<a href="/` + strings.Repeat("y", 1<<20) + `">x</a><a href="/ok">`, 1},
		{"deep nesting", strings.Repeat("<div>", 100000) + `<a href="/deep">` + strings.Repeat("</div>", 100000), 1},
		{"many links", strings.Repeat(`<a href="/same">`, 50000), 1},
		{"binary junk", "\x00\xff\xfe<a href=\"/\x00\">\x80<", 1},
		{"empty", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Extract([]byte(tt.body), "text/html", page, Options{})
			if err != nil {
				t.Fatalf("Extract: %v", err)
			}
			if len(got.Links) != tt.links {
				t.Errorf("got %d links %v, want %d", len(got.Links), got.Links, tt.links)
			}
		})
	}
}

func TestXRobotsTag(t *testing.T) {
	tests := []struct {
		values            []string
		noindex, nofollow bool
	}{
		{nil, false, false},
		{[]string{"noindex"}, true, false},
		{[]string{"NoFollow"}, false, true},
		{[]string{"none"}, true, true},
		{[]string{"noindex, nofollow"}, true, true},
		{[]string{"all", "nofollow"}, false, true},
		{[]string{"googlebot: noindex, nofollow"}, false, false},
		{[]string{"crawlstack: noindex"}, true, false},
		{[]string{"CrawlStack: nofollow, otherbot: noindex"}, false, true},
		{[]string{"otherbot: noindex", "nofollow"}, false, true},
		{[]string{"unavailable_after: 25 Jun 2010 15:00:00 PST, noindex"}, true, false},
		{[]string{"max-snippet: 20"}, false, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.values), func(t *testing.T) {
			ni, nf := XRobotsTag(tt.values, "crawlstack")
			if ni != tt.noindex || nf != tt.nofollow {
				t.Errorf("XRobotsTag(%q) = %v, %v; want %v, %v", tt.values, ni, nf, tt.noindex, tt.nofollow)
			}
		})
	}
}

func TestRefreshURL(t *testing.T) {
	tests := []struct {
		content, want string
		ok            bool
	}{
		{"0; url=/next", "/next", true},
		{"5;URL='/q?a=1'", "/q?a=1", true},
		{`3, url="/dq" rest`, "/dq", true},
		{"5 url=/space", "/space", true},
		{"0.5; /bare", "/bare", true},
		{"0; urlish", "urlish", true},
		{"5", "", false},
		{"5;", "", false},
		{"url=/no-delay", "", false},
		{"5x; url=/bad", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.content, func(t *testing.T) {
			got, ok := refreshURL(tt.content)
			if got != tt.want || ok != tt.ok {
				t.Errorf("refreshURL(%q) = %q, %v; want %q, %v", tt.content, got, ok, tt.want, tt.ok)
			}
		})
	}
}
