package crawlstate

import (
	"context"
	"errors"
	"fmt"

	"github.com/crawlstack/crawlstack/shared/errclass"
	"github.com/crawlstack/crawlstack/shared/table"
)

// ReserveBudget takes one page of the crawl's budget (maxPages, 0: unlimited) and of the host's
// (maxPerHost, 0: unlimited). It returns ErrBudget when either is used up.
//
// The crawl's pages are taken from the crawl item in blocks (see takeBlock) and handed out from
// the block in memory: one conditional write per block instead of one per page, so the crawl
// item is no hot key. Budgets err on the safe side: the pages of a block are counted used in the
// table when the block is taken, so the crawl never admits more than maxPages, however many
// stores take blocks at once; but the pages a store has not handed out when it goes (a Lambda
// container reclaimed, crawl run stopped) are never admitted. Each store that goes leaves at most
// a block less one unused: under 1% of maxPages, and fewer near the end of the budget, where
// blocks shrink. A page taken for a URL whose host is over its own budget goes back to the block.
func (s *Store) ReserveBudget(ctx context.Context, crawl, host string, maxPages, maxPerHost int) error {
	var b *crawlBudget
	if maxPages > 0 {
		b = s.crawlBudget(crawl)
		if err := b.take(ctx, s, crawl, maxPages); err != nil {
			return err
		}
	}
	if maxPerHost > 0 {
		reserve := s.reserve
		if s.BufferCounters {
			reserve = s.reserveBuffered
		}
		if err := reserve(ctx, budgetKey(crawl, host), attrPages, maxPerHost); err != nil {
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

// hostCount is a per-host page count: what the table said, plus this process's unflushed pages.
type hostCount struct{ base, local int64 }

// reserveBuffered is reserve for the per-host trap budget when counters are buffered: the count
// is read once per invocation and the increments are written by Flush, one write per host
// instead of one per page. Workers running at the same time may overshoot the budget by the
// pages each admits before its Flush: a spider-trap guard need not be exact.
func (s *Store) reserveBuffered(ctx context.Context, key, attr string, max int) error {
	s.mu.Lock()
	known := s.hosts[key] != nil
	s.mu.Unlock()
	var base int64
	if !known {
		it, err := s.t.Get(ctx, key)
		if err != nil && !errors.Is(err, table.ErrNotFound) {
			return fmt.Errorf("read budget %s: %w", key, err)
		}
		base = it.Int(attr)
	}
	// Look the count up again under the lock: a Flush may have swapped the map meanwhile.
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hosts == nil {
		s.hosts = map[string]*hostCount{}
	}
	hc := s.hosts[key]
	if hc == nil {
		hc = &hostCount{base: base}
		s.hosts[key] = hc
	}
	if hc.base+hc.local >= int64(max) {
		return ErrBudget
	}
	hc.local++
	return nil
}

func (s *Store) reserve(ctx context.Context, key, attr string, max int) error {
	_, err := s.t.Update(ctx, key, table.Update{Add: map[string]int64{attr: 1}},
		table.Or(table.NotExists(attr), table.Lt(attr, int64(max))))
	if _, full := table.IsConditionFailed(err); full {
		return ErrBudget
	}
	if err != nil {
		return fmt.Errorf("reserve budget %s: %w", key, err)
	}
	return nil
}
