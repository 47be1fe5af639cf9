package e2etest

import (
	"fmt"
	"strings"

	"github.com/crawlstack/crawlstack/shared/demo/demosite"
)

// CheckSitemapsFindEveryPage crawls a site whose orphan pages only its sitemaps list (the site
// must have some: NewSiteWithOrphans): a URL list of the site finds none of them, and a spec that
// asks for sitemaps finds them all, through robots.txt's Sitemap: line, a sitemap index, a gzip
// sitemap and /sitemap.xml, with nothing lost.
func (h *Harness) CheckSitemapsFindEveryPage(concurrency int) {
	t := h.T
	t.Helper()
	orphans := h.Site.Orphans
	if orphans == 0 {
		t.Fatal("the site has no orphan pages: build it with NewSiteWithOrphans")
	}
	links := h.CrawlFile("links.txt", h.Site.URL+"\n", concurrency)
	h.CheckNothingLost(links)
	if n := h.Site.OrphansFetched(); n != 0 {
		t.Fatalf("a crawl of the links alone fetched %d orphan pages: they are not sitemap-only", n)
	}

	crawl := h.CrawlFile("sitemaps.yaml", fmt.Sprintf("version: 1\nseeds: [%s]\nsitemaps: true\n", h.Site.URL), concurrency)
	// Every page, every orphan, and the five files that list them: robots.txt, /sitemap.xml, the
	// index and its two sitemaps.
	h.checkInvariants(crawl, true, h.Site.Pages+orphans+5)
	if n := h.Site.OrphansFetched(); n != orphans {
		t.Errorf("the sitemaps crawl fetched %d of the %d orphan pages", n, orphans)
	}
	recs := h.RecordsOf(crawl)
	base := strings.TrimSuffix(h.Site.URL, "/")
	for i := 0; i < orphans; i++ {
		if r, ok := recs[base+demosite.OrphanPath(i)]; !ok || r.Title != fmt.Sprintf("Orphan %d", i) {
			t.Errorf("orphan %d: record %+v (found %v)", i, r, ok)
		}
	}
	for i := 0; i < h.Site.Pages; i++ {
		if _, ok := recs[h.Site.PageURL(i)]; !ok {
			t.Errorf("no record for linked page %d", i)
		}
	}
	for _, p := range []string{"/robots.txt", "/sitemap.xml", "/sitemaps/index.xml", "/sitemaps/a.xml.gz", "/sitemaps/b.xml"} {
		if r, ok := recs[base+p]; !ok || !r.Sitemap {
			t.Errorf("%s: record %+v (found %v), want a sitemap record", p, r, ok)
		}
	}
}
