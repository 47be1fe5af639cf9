package fetcher

import (
	"context"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
)

// giveBackSkipped gives the crawl's page budget (--max-pages, a spec's max_pages) a page back for
// each of outs, outcomes of the crawl just recorded, that ended skipped, less those whose URLs
// another owner took over (taken, by key): the budget counts the pages fetched
// (crawlstate.ReturnPages). A page that cannot be given back is only a page the crawl
// will not admit, so a failure is logged, and the records stand.
func (h *Handler) giveBackSkipped(ctx context.Context, crawl string, outs []crawlstate.Outcome, taken map[string]bool) {
	n := 0
	for _, o := range outs {
		if o.State == crawlstate.Skipped && !taken[o.Key] {
			n++
		}
	}
	if n == 0 || h.crawls == nil {
		return
	}
	c, err := h.crawls.For(ctx, crawl)
	if err == nil {
		err = h.pageBudget.ReturnPages(ctx, crawl, n, c.MaxPages)
	}
	if err != nil {
		h.log.Warn("give skipped pages back to the crawl's budget", "crawl", crawl, "pages", n, "err", err.Error())
	}
}
