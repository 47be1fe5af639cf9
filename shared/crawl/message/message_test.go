package message

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
)

func TestRoundTrip(t *testing.T) {
	hdr := Header{Crawl: "c1"}
	fetchedAt := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		msg  any
		kind Kind
	}{
		{"links", Links{Header: hdr, Root: "http://a.test/", Parent: "http://a.test/", Depth: 1, URLs: []string{"http://a.test/x"}}, KindLinks},
		{"seed links", &Links{Header: hdr, URLs: []string{"http://a.test/"}}, KindLinks},
		{"fetch", Fetch{Header: hdr, Target: Target{URL: "http://a.test/x", Root: "http://a.test/", Depth: 2, Waits: 1}}, KindFetch},
		{"fetch of several", Pack("c1", []Target{{URL: "http://a.test/x", Root: "http://a.test/", Depth: 2},
			{URL: "http://b.test/", Root: "http://b.test/", Slot: fetchedAt, Gap: 1000}}), KindFetch},
		{"parse", Parse{Header: hdr, URL: "http://a.test/x", FinalURL: "http://a.test/y", Root: "http://a.test/", Status: 200,
			FetchedAt: fetchedAt, WARC: Ref{Key: "pages/c1/a.warc.gz", Offset: 10, Length: 99}}, KindParse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, err := Encode(tt.msg)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			got, err := Decode(body, tt.kind)
			if err != nil {
				t.Fatalf("Decode(%s): %v", body, err)
			}
			again, err := Encode(got)
			if err != nil {
				t.Fatalf("Encode again: %v", err)
			}
			if again != body {
				t.Errorf("round trip changed the message:\n got %s\nwant %s", again, body)
			}
		})
	}
}

func TestDecodeRejectsPoison(t *testing.T) {
	good := `{"v":1,"kind":"fetch","crawl":"c","url":"http://a.test/","root":"http://a.test/","depth":0}`
	if _, err := DecodeFetch(good); err != nil {
		t.Fatalf("the good message must decode: %v", err)
	}
	tests := []struct{ name, body, why string }{
		{"not json", `hello`, "not a JSON message"},
		{"truncated", good[:30], "not a JSON message"},
		{"old version", strings.Replace(good, `"v":1`, `"v":0`, 1), "schema version"},
		{"wrong kind", strings.Replace(good, `"fetch"`, `"parse"`, 1), "kind"},
		{"unknown field", strings.Replace(good, `"depth":0`, `"depth":0,"evil":true`, 1), "unknown field"},
		{"no url", strings.Replace(good, `"url":"http://a.test/",`, ``, 1), "no url"},
		{"no crawl", strings.Replace(good, `"crawl":"c"`, `"crawl":""`, 1), "crawl id"},
		{"negative depth", strings.Replace(good, `"depth":0`, `"depth":-1`, 1), "negative"},
		{"trailing data", good + `{}`, "JSON"},
		{"huge", `{"v":1,"kind":"fetch","crawl":"c","url":"` + strings.Repeat("a", MaxBytes) + `"}`, "over the"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeFetch(tt.body)
			if err == nil {
				t.Fatal("Decode accepted a poison message")
			}
			if errclass.Of(err) != errclass.Poison {
				t.Errorf("class = %q, want poison (%v)", errclass.Of(err), err)
			}
			if !strings.Contains(err.Error(), tt.why) {
				t.Errorf("error %q does not say %q", err, tt.why)
			}
		})
	}
}

func TestFetchOfSeveralURLs(t *testing.T) {
	a := Target{URL: "http://a.test/", Root: "http://a.test/"}
	b := Target{URL: "http://b.test/x", Root: "http://b.test/", Depth: 3, Retries: 1}
	m := Pack("c1", []Target{a, b})
	parts := m.Split()
	if len(parts) != 2 || !reflect.DeepEqual(parts[0].Target, a) || !reflect.DeepEqual(parts[1].Target, b) || parts[1].Crawl != "c1" {
		t.Errorf("Split = %+v, want a and b in crawl c1", parts)
	}
	if got := m.URLList(); len(got) != 2 || got[0] != a.URL || got[1] != b.URL {
		t.Errorf("URLList = %v", got)
	}
	if one := Pack("c1", []Target{a}); one.URLs != nil || !reflect.DeepEqual(one.Target, a) || len(one.Split()) != 1 {
		t.Errorf("Pack of one URL = %+v, want the single-URL form", one)
	}
	good, err := Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	many := make([]Target, MaxFetchURLs+1)
	for i := range many {
		many[i] = a
	}
	tooMany, err := Encode(Pack("c1", many))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, body, why string }{
		{"both forms", strings.Replace(good, `"urls"`, `"url":"http://c.test/","root":"http://c.test/","urls"`, 1), "both"},
		{"a url without root", strings.Replace(good, `"root":"http://b.test/",`, ``, 1), "url 1: no root"},
		{"too many", tooMany, "over the limit"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeFetch(tt.body)
			if err == nil || errclass.Of(err) != errclass.Poison || !strings.Contains(err.Error(), tt.why) {
				t.Errorf("DecodeFetch(%s) = %v, want a poison error saying %q", tt.body, err, tt.why)
			}
		})
	}
}

func TestLinksValidation(t *testing.T) {
	many := make([]string, MaxLinks+1)
	for i := range many {
		many[i] = "http://a.test/"
	}
	tests := []struct {
		name string
		m    Links
	}{
		{"empty", Links{Header: Header{Crawl: "c"}}},
		{"too many", Links{Header: Header{Crawl: "c"}, URLs: many}},
		{"deep without root", Links{Header: Header{Crawl: "c"}, Depth: 1, URLs: []string{"http://a.test/"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, err := Encode(tt.m)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := DecodeLinks(body); errclass.Of(err) != errclass.Poison {
				t.Errorf("DecodeLinks = %v, want a poison error", err)
			}
		})
	}
}

func TestSplitLinks(t *testing.T) {
	urls := make([]string, 2*MaxLinks+3)
	for i := range urls {
		urls[i] = "http://a.test/" + strings.Repeat("x", i%7)
	}
	parts := SplitLinks(Links{Header: Header{Crawl: "c"}, Root: "r", Depth: 3}, urls)
	if len(parts) != 3 {
		t.Fatalf("got %d parts, want 3", len(parts))
	}
	n := 0
	for _, p := range parts {
		if p.Root != "r" || p.Depth != 3 || p.Crawl != "c" {
			t.Errorf("part lost its template: %+v", p.Header)
		}
		n += len(p.URLs)
	}
	if n != len(urls) {
		t.Errorf("parts hold %d urls, want %d", n, len(urls))
	}
	if len(parts[2].URLs) != 3 {
		t.Errorf("last part has %d urls, want 3", len(parts[2].URLs))
	}
}

func TestSplitLinksBoundsBytes(t *testing.T) {
	long := make([]string, 150)
	for i := range long {
		// Query-heavy URLs: '&' is where an HTML-escaping encoder would grow a message 6-fold.
		long[i] = "http://a.test/?" + strings.Repeat("a=1&", 470) + strings.Repeat("y", i%3)
	}
	parts := SplitLinks(Links{Header: Header{Crawl: "c"}, Root: "r", Depth: 1}, long)
	total, batch := 0, 0
	for i, p := range parts {
		body, err := Encode(p)
		if err != nil {
			t.Fatalf("part %d: %v", i, err)
		}
		if len(body) > MaxLinksBytes+512 {
			t.Errorf("part %d is %d bytes, over the per-message bound", i, len(body))
		}
		if i < 10 {
			batch += len(body)
		}
		total += len(p.URLs)
	}
	if total != len(long) {
		t.Errorf("parts hold %d urls, want %d", total, len(long))
	}
	if batch > 256*1024 {
		t.Errorf("ten messages take %d bytes, over SQS's 256 KiB batch limit", batch)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(`{"v":1,"kind":"fetch","crawl":"c","url":"http://a.test/","root":"http://a.test/","depth":0}`)
	f.Add(`{"v":1,"kind":"links","crawl":"c","depth":0,"urls":["http://a.test/"]}`)
	f.Add(`{"v":1,"kind":"parse","crawl":"c","url":"u","finalUrl":"u","root":"r","depth":0,"status":200,"fetchedAt":"2026-01-01T00:00:00Z","warc":{"key":"k","offset":0,"length":1}}`)
	f.Fuzz(func(t *testing.T, body string) {
		for _, k := range []Kind{KindLinks, KindFetch, KindParse} {
			m, err := Decode(body, k)
			if err != nil {
				if errclass.Of(err) != errclass.Poison {
					t.Fatalf("error without the poison class: %v", err)
				}
				continue
			}
			again, err := Encode(m)
			if err != nil {
				t.Fatalf("a decoded message must encode: %v", err)
			}
			if _, err := Decode(again, k); err != nil {
				t.Fatalf("re-encoded message does not decode: %v", err)
			}
		}
	})
}

func TestByCrawl(t *testing.T) {
	order, groups := ByCrawl([]string{"b1", "a1", "b2", "c1", "a2"}, func(s string) string { return s[:1] })
	if strings.Join(order, ",") != "b,a,c" {
		t.Errorf("order = %v, want b,a,c (first appearance)", order)
	}
	if strings.Join(groups["a"], ",") != "a1,a2" || strings.Join(groups["b"], ",") != "b1,b2" || len(groups["c"]) != 1 {
		t.Errorf("groups = %v", groups)
	}
}

func TestEachCrawl(t *testing.T) {
	var calls []string
	failed := EachCrawl([]string{"b1", "a1", "b2", "c1"}, func(s string) string { return s[:1] }, func(crawl string, items []string) []string {
		calls = append(calls, crawl+":"+strings.Join(items, "+"))
		return items[len(items)-1:]
	})
	if strings.Join(calls, " ") != "b:b1+b2 a:a1 c:c1" || strings.Join(failed, ",") != "b2,a1,c1" {
		t.Errorf("calls %v, failed %v; want each crawl's items once, in order of first appearance, and their answers joined", calls, failed)
	}
}

// BenchmarkDecodeLinks decodes the Links message of a page with 20 out-links, as parse sends it.
func BenchmarkDecodeLinks(b *testing.B) {
	m := Links{Header: Header{Crawl: "c"}, Root: "http://127.0.0.1:8080/", Parent: "http://127.0.0.1:8080/p/1", Depth: 3}
	for i := range 20 {
		m.URLs = append(m.URLs, fmt.Sprintf("http://127.0.0.1:8080/p/%d", i*37))
	}
	body, err := Encode(m)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeLinks(body); err != nil {
			b.Fatal(err)
		}
	}
}

func TestParseMessageOfAFile(t *testing.T) {
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	page := func(u string, off int64) Page {
		return Page{URL: u, FinalURL: u, Root: "http://a.test/", Depth: 1, Status: 200, FetchedAt: at, Offset: off, Length: 10}
	}
	m := Parse{Header: Header{Crawl: "c"}, File: "pages/c/f.warc.gz",
		Pages: []Page{page("http://a.test/1", 0), page("http://a.test/2", 10)}}
	body, err := Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeParse(body)
	if err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	file, pages := got.PageList()
	if file != m.File || len(pages) != 2 || pages[1] != m.Pages[1] || got.Name() != "pages/c/f.warc.gz#0" {
		t.Errorf("decoded %+v (file %s, pages %+v, name %s), want %+v", got, file, pages, got.Name(), m)
	}
	one := Parse{Header: Header{Crawl: "c"}, URL: "http://a.test/2", FinalURL: "http://a.test/2", Root: "http://a.test/",
		Depth: 1, Status: 200, FetchedAt: at, WARC: Ref{Key: "pages/c/f.warc.gz", Offset: 10, Length: 10}}
	if file, pages := one.PageList(); file != m.File || len(pages) != 1 || pages[0] != m.Pages[1] || one.Name() != "pages/c/f.warc.gz@10" {
		t.Errorf("a one-page message lists %s %+v named %s, want the file's second page", file, pages, one.Name())
	}
	bad := []struct {
		name string
		m    Parse
		says string
	}{
		{"both forms", Parse{Header: m.Header, URL: "http://a.test/", File: m.File, Pages: m.Pages}, "both"},
		{"a file without pages", Parse{Header: m.Header, File: m.File}, "no pages"},
		{"a page without a location", Parse{Header: m.Header, File: m.File, Pages: []Page{{URL: "u", FinalURL: "u", Root: "r"}}}, "page 0"},
		{"pages without a file", Parse{Header: m.Header, Pages: m.Pages}, "no warc location"},
		{"too many pages", Parse{Header: m.Header, File: m.File, Pages: make([]Page, MaxPages+1)}, "over the limit"},
	}
	for _, b := range bad {
		body, err := Encode(b.m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeParse(body); err == nil || !strings.Contains(err.Error(), b.says) || errclass.Of(err) != errclass.Poison {
			t.Errorf("%s: err = %v, want poison saying %q", b.name, err, b.says)
		}
	}
}

// TestRequeuedNamesTheOwnersThatMayHoldTheClaim: an owner that holds the claim starts the list
// again; one that may hold it joins the owners before it, the latest first, at most MaxPrev; each
// URL of a message of several gets the list.
func TestRequeuedNamesTheOwnersThatMayHoldTheClaim(t *testing.T) {
	m := &Fetch{Header: Header{Crawl: "c"}, Target: Target{URL: "http://a.test/"}}
	m.Requeued("A", true)
	m.Requeued("B", false)
	m.Requeued("B", false) // the same owner again is not named twice
	if want := []string{"B", "A"}; !reflect.DeepEqual(m.Prev, want) {
		t.Errorf("Prev = %v, want %v", m.Prev, want)
	}
	m.Requeued("C", true)
	if want := []string{"C"}; !reflect.DeepEqual(m.Prev, want) {
		t.Errorf("after a holder, Prev = %v, want %v", m.Prev, want)
	}
	for i := range 2 * MaxPrev {
		m.Requeued(strconv.Itoa(i), false)
	}
	if len(m.Prev) != MaxPrev || m.Prev[0] != strconv.Itoa(2*MaxPrev-1) {
		t.Errorf("Prev = %v, want the latest %d owners, latest first", m.Prev, MaxPrev)
	}
	several := Pack("c", []Target{{URL: "http://a.test/", Root: "http://a.test/"}, {URL: "http://b.test/", Root: "http://b.test/", Prev: []string{"X"}}})
	several.Requeued("M", false)
	if several.Prev != nil || !reflect.DeepEqual(several.URLs[0].Prev, []string{"M"}) ||
		!reflect.DeepEqual(several.URLs[1].Prev, []string{"M", "X"}) {
		t.Errorf("a message of several: %+v", several)
	}
	if err := several.validate(); err != nil {
		t.Errorf("a message of several re-queued does not validate: %v", err)
	}
}

// TestParseMessagesCarryTheRenderedPage: the render step's fields go through a parse message in
// both its forms, a message without them encodes as before, and a rendered page without a
// whole location is poison.
func TestParseMessagesCarryTheRenderedPage(t *testing.T) {
	at := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	page := Page{URL: "http://a.test/", FinalURL: "http://a.test/", Root: "http://a.test/", Status: 200, FetchedAt: at, Offset: 10, Length: 20}
	plain, err := Encode(Parse{Header: Header{Crawl: "c"}, File: "pages/f.warc.gz", Pages: []Page{page}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain, "render") {
		t.Errorf("a page not rendered encodes as %s", plain)
	}
	rendered := page
	rendered.Rendered = &Ref{Key: "rendered/c/x.warc.gz", Offset: 7, Length: 99}
	failed := page
	failed.RenderError = "render/no-browser"
	body, err := Encode(Parse{Header: Header{Crawl: "c"}, File: "pages/f.warc.gz", Pages: []Page{rendered, failed}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := DecodeParse(body)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Pages[0].Rendered; got == nil || *got != *rendered.Rendered || m.Pages[1].RenderError != failed.RenderError {
		t.Errorf("decoded pages %+v", m.Pages)
	}
	one, err := Encode(Parse{Header: Header{Crawl: "c"}, URL: page.URL, FinalURL: page.URL, Root: page.Root, FetchedAt: at,
		WARC: Ref{Key: "pages/f.warc.gz", Offset: 10, Length: 20}, Rendered: rendered.Rendered})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := DecodeParse(one); err != nil {
		t.Fatal(err)
	} else if _, pages := m.PageList(); pages[0].Rendered == nil || *pages[0].Rendered != *rendered.Rendered {
		t.Errorf("a one-page message's page %+v", pages[0])
	}
	bad := page
	bad.Rendered = &Ref{Key: "rendered/c/x.warc.gz"}
	body, err = Encode(Parse{Header: Header{Crawl: "c"}, File: "pages/f.warc.gz", Pages: []Page{bad}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeParse(body); errclass.Of(err) != errclass.Poison {
		t.Errorf("a rendered page with no length: %v, want poison", err)
	}
}
