package e2etest

import (
	"bytes"
	"context"
	"fmt"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile/warctest"
	"github.com/crawlstack/crawlstack/shared/demo/demosite"
)

// CheckKeptTypeIsArchived crawls a site whose home page links a PDF (demosite.Site.Files, which
// the caller sets before the site serves) from a spec that keeps application/pdf: the PDF is
// fetched once, stored in the crawl's WARC files as a response record that warcio.js reads back
// with every page's, holds the bytes the site served, and has a record of its type without an
// error; every page is fetched too.
func (h *Harness) CheckKeptTypeIsArchived(concurrency int) {
	t := h.T
	t.Helper()
	ctx := context.Background()
	if !h.Site.Files {
		t.Fatal("CheckKeptTypeIsArchived needs a site with Files")
	}
	spec := fmt.Sprintf("version: 1\nseeds:\n  - %s\nkeep: [application/pdf]\n", h.Site.URL)
	crawl := h.CrawlFile("keep.yaml", spec, concurrency)
	tally, err := crawlstate.New(h.Table).Tally(ctx, crawl)
	if err != nil {
		t.Fatal(err)
	}
	if tally.Fetched != int64(h.Site.Pages+1) || tally.Pending() != 0 || tally.Failed != 0 {
		t.Errorf("tally %d fetched, %d pending, %d failed: want the %d pages and the PDF fetched", tally.Fetched, tally.Pending(), tally.Failed, h.Site.Pages)
	}
	if n := h.Site.Hits(demosite.FilePath); n != 1 {
		t.Errorf("the PDF asked for %d times, want once", n)
	}
	r, ok := h.RecordsOf(crawl)[h.Site.URL[:len(h.Site.URL)-1]+demosite.FilePath]
	if !ok {
		t.Fatalf("no record of the PDF")
	}
	if r.ContentType != "application/pdf" || r.Class != "" || r.Error != "" || len(r.OutLinks) != 0 {
		t.Errorf("the PDF's record %+v: want application/pdf, no error, no links", r)
	}
	raw, err := h.Blobs.GetRange(ctx, r.WARC.Key, r.WARC.Offset, r.WARC.Length)
	if err != nil {
		t.Fatal(err)
	}
	page, err := warcfile.Decode(raw)
	if err != nil || !bytes.Equal(page.Body, demosite.FileBody) {
		t.Errorf("the PDF's WARC record holds %q (%v), want the %d bytes the site served", page.Body, err, len(demosite.FileBody))
	}
	if got := warctest.Check(t, h.warcFiles(crawl)...); got.Responses != h.Site.Pages+1 {
		t.Errorf("warcio.js read %+v: want %d responses, the pages' and the PDF's", got, h.Site.Pages+1)
	}
}
