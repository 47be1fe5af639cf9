package crawlstate

import (
	"context"

	"github.com/crawlstack/crawlstack/shared/meter"
)

// AddCost adds u, billed units spent on the crawl, to its ledger: counters kept and written like
// the others (see Flush), so that the crawl record shows what the crawl has cost so far.
func (s *Store) AddCost(ctx context.Context, crawl string, u meter.Units) error {
	c := u.Counters()
	if len(c) == 0 {
		return nil
	}
	return s.count(ctx, crawl, c)
}
