package sitemap

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"strings"
	"testing"
	"time"
)

func gz(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

const urlset = `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc> http://127.0.0.1/a?x=1&amp;y=2 </loc><lastmod>2026-11-30</lastmod><priority>0.5</priority></url>
  <url><loc>http://127.0.0.1/b</loc><lastmod>2026-11-30T10:20:30+01:00</lastmod></url>
  <url><loc>http://127.0.0.1/c</loc><lastmod>yesterday</lastmod></url>
  <url><lastmod>2026-01-01</lastmod></url>
</urlset>`

func TestParse(t *testing.T) {
	want := []Entry{
		{"http://127.0.0.1/a?x=1&y=2", time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)},
		{"http://127.0.0.1/b", time.Date(2026, 11, 30, 9, 20, 30, 0, time.UTC)},
		{"http://127.0.0.1/c", time.Time{}},
	}
	for name, body := range map[string][]byte{"plain": []byte(urlset), "gzip": gz(t, urlset)} {
		s, err := Parse(body)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if fmt.Sprint(s.URLs) != fmt.Sprint(want) || len(s.Sitemaps) != 0 || s.Truncated {
			t.Errorf("%s: %+v, want urls %v", name, s, want)
		}
	}
	idx := `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>http://127.0.0.1/s1.xml.gz</loc>
<lastmod>2026-10-01</lastmod></sitemap><sitemap><loc>http://127.0.0.1/s2.xml</loc></sitemap></sitemapindex>`
	s, err := Parse([]byte(idx))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.URLs) != 0 || len(s.Sitemaps) != 2 || s.Sitemaps[0].Loc != "http://127.0.0.1/s1.xml.gz" || s.Sitemaps[0].LastMod.IsZero() {
		t.Errorf("index %+v", s)
	}
	s, err = Parse([]byte("http://127.0.0.1/t1\n\nhttps://127.0.0.1/t2\n"))
	if err != nil || len(s.URLs) != 2 || s.URLs[1].Loc != "https://127.0.0.1/t2" {
		t.Errorf("text sitemap %+v, %v", s, err)
	}
}

func TestBadSitemapsAreErrors(t *testing.T) {
	for name, body := range map[string][]byte{
		"html":        []byte("<html><body>hi</body></html>"),
		"text junk":   []byte("hello world\n"),
		"broken gzip": {0x1f, 0x8b, 1, 2, 3},
		"not xml":     []byte("<<<"),
	} {
		if _, err := Parse(body); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestTheProtocolsLimits(t *testing.T) {
	var b strings.Builder
	b.WriteString("<urlset>")
	for i := range MaxEntries + 10 {
		fmt.Fprintf(&b, "<url><loc>http://127.0.0.1/%d</loc></url>", i)
	}
	b.WriteString("</urlset>")
	s, err := Parse(gz(t, b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.URLs) != MaxEntries || !s.Truncated {
		t.Errorf("%d urls, truncated %v; want %d and truncated", len(s.URLs), s.Truncated, MaxEntries)
	}
	// A gzip bomb stops at the byte limit uncompressed (here 1 MB, MaxBytes in Parse), keeping the
	// entries before; so does a plain file over it.
	const limit = 1 << 20
	big := "<urlset><url><loc>http://127.0.0.1/first</loc></url><!--" + strings.Repeat("x", limit) + "--><url><loc>http://127.0.0.1/late</loc></url></urlset>"
	for name, body := range map[string][]byte{"gzip": gz(t, big), "plain": []byte(big)} {
		s, err = parse(body, limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.URLs) != 1 || !s.Truncated {
			t.Errorf("%s: %d urls, truncated %v; want the first only, and truncated", name, len(s.URLs), s.Truncated)
		}
	}
}

func TestFromRobots(t *testing.T) {
	got := FromRobots([]byte("User-agent: *\nDisallow: /private/\nSitemap: http://127.0.0.1/index.xml\nsitemap: http://127.0.0.1/b.xml\n"))
	if strings.Join(got, " ") != "http://127.0.0.1/index.xml http://127.0.0.1/b.xml" {
		t.Errorf("sitemaps %v", got)
	}
}
