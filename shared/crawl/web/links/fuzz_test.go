package links

import (
	"testing"
	"unicode/utf8"

	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
)

// FuzzExtract checks that Extract never panics on any body and content type, and that what it
// returns respects its bounds: at most MaxLinks normalised links and a short, valid UTF-8 title.
func FuzzExtract(f *testing.F) {
	f.Add([]byte(`<title>t</title><base href="/b/"><a href="x" rel=nofollow>`), "text/html")
	f.Add([]byte("<meta charset=\"windows-1251\"><title>\xcf\xf0\xe8</title><a href=\"/\xec\">"), "")
	f.Add([]byte(`<meta http-equiv=refresh content="0;url=/r"><link rel=canonical href=/c>`), "text/html; charset=shift_jis")
	f.Add([]byte(`<meta name=robots content=none><area href=//other.example/>`), "application/xhtml+xml")
	f.Add([]byte("<a href=\"/1\"><div><a href='/2"), "text/html; charset=utf-16")
	const maxLinks, maxTitle = 20, 40
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		p, err := Extract(body, contentType, page, Options{MaxLinks: maxLinks, MaxTitleBytes: maxTitle, UserAgentToken: "crawlstack"})
		if err != nil {
			return
		}
		if len(p.Links) > maxLinks {
			t.Fatalf("%d links, over %d", len(p.Links), maxLinks)
		}
		if len(p.Title) > maxTitle || !utf8.ValidString(p.Title) {
			t.Fatalf("title %q: over %d bytes or not UTF-8", p.Title, maxTitle)
		}
		for _, l := range p.Links {
			u, err := urlnorm.Normalize(l.URL)
			if err != nil || u.String() != l.URL {
				t.Fatalf("link %q is not normalised: %v, %v", l.URL, u, err)
			}
		}
	})
}
