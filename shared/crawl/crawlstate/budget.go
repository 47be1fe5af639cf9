package crawlstate

import (
	"context"
	"errors"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
)

// ReserveBudget takes one page of the crawl's budget (maxPages, 0: unlimited) and of the host's
// (maxPerHost, 0: unlimited). It returns ErrBudget when either is used up.
//
// The crawl's budget is taken from its item in blocks (see takeBlock) and handed out from the
// block in memory: one conditional write per block instead of one per page, so the crawl item is
// no hot key. A host's first pages cost no write of their own: they come under the store's
// allowance of the crawl's host budgets, one write per store (hostbudget.go); past it, from the
// host's item in blocks. Budgets err on the safe side: the pages of a block are counted used in
// the table when the block is taken, so the crawl never admits more than maxPages (nor a host
// more than maxPerHost), however many stores take blocks at once; but the pages a store has not
// handed out when it goes (a Lambda container reclaimed, crawl run stopped) are never admitted.
// Each store that goes leaves at most a block less one unused: under 1% of the budget, and fewer
// near its end, where blocks shrink. A page taken for a URL whose host is over its own budget goes
// back to the crawl's block.
func (s *Runs) ReserveBudget(ctx context.Context, crawl, host string, maxPages, maxPerHost int) error {
	var b *blockBudget
	if maxPages > 0 {
		b = s.budget(CrawlKey(crawl), attrBudget)
		if err := b.take(ctx, s, maxPages); err != nil {
			return err
		}
	}
	if maxPerHost > 0 {
		if err := s.reserveHostPage(ctx, crawl, host, maxPerHost); err != nil {
			if b != nil {
				b.giveBack()
			}
			if errors.Is(err, ErrBudget) {
				return errclass.Errorf(errclass.Trap, "host %s reached its budget of %d pages", host, maxPerHost)
			}
			return err
		}
	}
	return nil
}
