package parser_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// sentByKind returns the URLs of the links messages on the schedule queue: pages, and sitemaps.
func (e *env) sentByKind() (pages, sitemaps []string) {
	e.t.Helper()
	for {
		msgs, err := e.q.Receive(context.Background(), scheduleQ, queue.MaxBatch, time.Minute, 0)
		if err != nil {
			e.t.Fatal(err)
		}
		if len(msgs) == 0 {
			slices.Sort(pages)
			slices.Sort(sitemaps)
			return pages, sitemaps
		}
		for _, qm := range msgs {
			l, err := message.DecodeLinks(qm.Body)
			if err != nil {
				e.t.Fatalf("invalid links message: %v", err)
			}
			if l.Sitemap {
				sitemaps = append(sitemaps, l.URLs...)
			} else {
				pages = append(pages, l.URLs...)
			}
		}
	}
}

// A page fetched as a sitemap is read as one: a robots.txt for its Sitemap: lines, an index for
// its sitemaps, a sitemap for its URLs; one that is no sitemap is recorded with class parse.
func TestSitemapPages(t *testing.T) {
	cases := []struct {
		name, path, contentType, body string
		pages, sitemaps               []string
		class                         errclass.Class
	}{
		{"robots.txt", "/robots.txt", "text/plain", "User-agent: *\nDisallow: /x\nSitemap: http://example.test/index.xml\n",
			nil, []string{"http://example.test/index.xml"}, ""},
		{"index", "/index.xml", "application/xml",
			`<sitemapindex><sitemap><loc>http://example.test/a.xml.gz</loc></sitemap><sitemap><loc>not a url</loc></sitemap></sitemapindex>`,
			nil, []string{"http://example.test/a.xml.gz"}, ""},
		{"urlset", "/a.xml", "application/xml",
			`<urlset><url><loc>http://example.test/p/2</loc><lastmod>2026-11-30</lastmod></url><url><loc>HTTP://EXAMPLE.TEST/p/1#x</loc></url></urlset>`,
			[]string{"http://example.test/p/1", "http://example.test/p/2"}, nil, ""},
		{"an HTML page is no sitemap", "/sitemap.xml", "text/html", "<html><body>Not found</body></html>", nil, nil, errclass.Parse},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			rec, m := e.sample()
			m.URL, m.FinalURL, m.Sitemap = "http://example.test"+c.path, "http://example.test"+c.path, true
			raw := warc(t, m.FinalURL, http.Header{"Content-Type": {c.contentType}}, c.body)
			rec = e.store(rec, m, raw, 0)
			if got := e.handle(rec); len(got) != 0 {
				t.Errorf("BatchItemFailures = %v, want none", got)
			}
			pages, sitemaps := e.sentByKind()
			if !slices.Equal(pages, c.pages) || !slices.Equal(sitemaps, c.sitemaps) {
				t.Errorf("sent pages %v and sitemaps %v, want %v and %v", pages, sitemaps, c.pages, c.sitemaps)
			}
			recs := e.records(m.Crawl)
			if len(recs) != 1 || !recs[0].Sitemap || recs[0].Class != c.class {
				t.Fatalf("records %+v, want one sitemap record of class %q", recs, c.class)
			}
			if done, err := e.state.IsMessageParsed(context.Background(), m.Crawl, m.Name()); err != nil || !done {
				t.Errorf("message parsed: %v, %v", done, err)
			}
		})
	}
}
