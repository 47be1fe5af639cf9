package e2etest

import (
	"context"
	"fmt"
	"strings"

	"github.com/crawlstack/crawlstack/shared/demosite"
)

// CheckSitemapsFindEveryPage crawls a site whose orphan pages only its sitemaps list (the site
// must have some: NewSiteWithOrphans): a URL list of the site finds none of them, and a spec that
// asks for sitemaps finds them all, through robots.txt's Sitemap: line, a sitemap index, a gzip
// sitemap and /sitemap.xml, with nothing lost.
func (h *Harness) CheckSitemapsFindEveryPage(concurrency int) {
	t := h.T
	t.Helper()
	ctx := context.Background()
	orphans := h.Site.Orphans
	if orphans == 0 {
		t.Fatal("the site has no orphan pages: build it with NewSiteWithOrphans")
	}
	links, err := h.Start(ctx, h.Res, "links.txt", []byte(h.Site.URL+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Run(ctx, links, h.Config(), h.Ports(), h.Queue, concurrency); err != nil {
		t.Fatal(err)
	}
	h.CheckNothingLost(links)
	if n := h.Site.OrphansFetched(); n != 0 {
		t.Fatalf("a crawl of the links alone fetched %d orphan pages: they are not sitemap-only", n)
	}

	spec := fmt.Sprintf("version: 1\nseeds: [%s]\nsitemaps: true\n", h.Site.URL)
	crawl, err := h.Start(ctx, h.Res, "sitemaps.yaml", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Run(ctx, crawl, h.Config(), h.Ports(), h.Queue, concurrency); err != nil {
		t.Fatal(err)
	}
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
