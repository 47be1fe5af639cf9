package e2etest

import (
	"context"
	"errors"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/finish"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// CheckAGrowingSeedFileExtendsItsCrawl crawls the site with its end announced by drain checks,
// and, once some pages are fetched, drops a new version of the seed file with another site's root
// appended, while the crawl is paused (so that it cannot end first). The crawl takes the new line
// in: no crawl of the new version is started, the crawl ends once, after both sites' pages, each
// fetched once, and every invariant holds over both.
func (h *Harness) CheckAGrowingSeedFileExtendsItsCrawl(concurrency int) {
	t := h.T
	t.Helper()
	ctx := context.Background()
	other := NewSite(t, 6, 2)
	cfg := h.endConfig()
	cfg.RunCheck, cfg.PauseWait = -1, time.Second
	ports := h.Ports()
	ann := &Announcer{}
	ports.Events = ann
	crawl, done := h.runInBackground(cfg, ports, concurrency)
	h.waitUntil("the first pages", func() bool { return h.Site.Fetched() >= 5 })
	h.setRun(crawl, crawlstate.Paused)
	grown, err := h.Start(ctx, h.Res, "seeds.txt", []byte(h.Site.URL+"\n"+other.URL+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	st := crawlstate.New(h.Table)
	h.waitUntil("the new version taken into the crawl", func() bool {
		ch, err := st.ChecksOf(ctx, crawl)
		return err == nil && ch.Extended != "" && !ch.Extending
	})
	if _, err := st.ChecksOf(ctx, grown); !errors.Is(err, table.ErrNotFound) {
		t.Errorf("the new version started crawl %s of its own (%v); want it taken into %s", grown, err, crawl)
	}
	h.setRun(crawl, crawlstate.Running)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	put, _ := ann.Put()
	pages := h.Site.Pages + other.Pages
	if len(put) != 1 || put[0].Crawl != crawl || put[0].End != finish.EndDrained || put[0].Counts.Fetched != int64(pages) {
		t.Fatalf("events %+v; want crawl %s's end once, with both sites' %d pages", put, crawl, pages)
	}
	if h.Site.Fetched() != h.Site.Pages || other.Fetched() != other.Pages {
		t.Errorf("the sites served %d and %d pages; want %d and %d", h.Site.Fetched(), other.Fetched(), h.Site.Pages, other.Pages)
	}
	if r, r2 := h.Site.Repeats(), other.Repeats(); len(r)+len(r2) != 0 {
		t.Errorf("pages fetched more than once: %v %v", r, r2)
	}
	h.checkInvariants(crawl, true, pages)
}
