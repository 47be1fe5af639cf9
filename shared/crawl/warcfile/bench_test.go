package warcfile

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// benchPages is a fetch batch of ten 20 KB HTML pages with the header of their request, as
// `make bench` stores them.
func benchPages() []Page {
	body := []byte("<!doctype html><html><body>" + strings.Repeat("<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit.</p>\n", 320) + "</body></html>")
	pages := make([]Page, 10)
	for i := range pages {
		pages[i] = Page{URL: "http://a.test/p/" + string(rune('a'+i)), Status: 200,
			Header: http.Header{"Content-Type": {"text/html; charset=utf-8"}}, Body: body, FetchedAt: time.Now(),
			Request: http.Header{"User-Agent": {"crawlstack/0 (+https://github.com/crawlstack/crawlstack)"}, "Accept-Encoding": {"gzip"}}}
	}
	return pages
}

func BenchmarkEncode(b *testing.B) {
	pages := benchPages()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Encode(pages); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	file, spans, err := Encode(benchPages())
	if err != nil {
		b.Fatal(err)
	}
	rec := file[spans[3].Offset : spans[3].Offset+spans[3].Length]
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(rec); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeRecord(b *testing.B) {
	for _, name := range []string{"with-request", "response-only"} {
		b.Run(name, func(b *testing.B) {
			p := benchPages()[0]
			if name == "response-only" {
				p.Request = nil
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := EncodeRecord(p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
