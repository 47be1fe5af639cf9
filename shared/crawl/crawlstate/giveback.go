package crawlstate

import (
	"context"
	"errors"
	"fmt"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// Pages given back to a budget: --max-pages counts the pages fetched, so a URL that took a page
// of the crawl's budget at its admission and then ended skipped (robots.txt, content type, size)
// gives it back, for another URL to be admitted. The crawl never holds more than its budget: a
// page goes back only once its URL is done, and the budget's item counts every page a store took
// less those given back.
//
// Giving back costs no write per page. A store that holds a block of the budget (the store of
// crawl run, whose handlers share it) puts the page back into its block, in memory. A store that
// holds none (a fetch container on AWS) gathers the pages and gives them back to the table a
// block at a time (BlockSize: one write per page for a budget under 200 pages, as taking it
// does); those it holds when it goes are lost, as the unused part of a block is. ReleaseBudgets
// gives back what a store holds, at the end of a run.

// ReturnPages gives n pages of the crawl's budget (maxPages) back.
func (s *Runs) ReturnPages(ctx context.Context, crawl string, n, maxPages int) error {
	if n <= 0 || maxPages <= 0 {
		return nil
	}
	b := s.budget(CrawlKey(crawl), attrBudget)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.holds {
		b.left += n
		return nil
	}
	b.returned += n
	if b.returned < BlockSize(maxPages) && b.lost == nil {
		return nil
	}
	return b.writeBack(ctx, s)
}

// ReleaseBudgets gives back to the table every page of the crawls' budgets that this store holds:
// the unused part of its blocks and the pages it gathered (ReturnPages). crawl run calls it when
// its handlers are done, so that the next run can use them. The store takes new blocks if it goes
// on. The hosts' budgets, a spider-trap guard of 100,000 pages by default, keep their unused
// blocks: a write per host for nothing that matters.
func (s *Runs) ReleaseBudgets(ctx context.Context) error {
	var errs []error
	s.budgets.Range(func(_, v any) bool {
		b := v.(*blockBudget)
		if b.attr != attrBudget {
			return true
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		if err := b.settle(ctx, s); err != nil {
			errs = append(errs, err)
			return true
		}
		b.returned += b.left
		b.left = 0
		if b.returned == 0 {
			return true
		}
		if err := b.writeBack(ctx, s); err != nil {
			errs = append(errs, err) // not lost: the next release tries again
		}
		return true
	})
	return errors.Join(errs...)
}

// writeBack takes the pages gathered (b.returned) off the budget's count of pages taken, once a
// write whose answer was lost is settled. b.mu is held. A budget with no count (nothing was ever
// taken from it) has nothing to give back. The write is numbered as takeBlock's are, so a replay
// gives nothing back twice.
func (b *blockBudget) writeBack(ctx context.Context, s *Runs) error {
	if err := b.settle(ctx, s); err != nil {
		return err
	}
	if b.returned == 0 {
		return nil
	}
	n := int64(b.returned)
	b.returned = 0
	if _, _, err := b.write(ctx, s, -n, table.Exists(b.attr)); err != nil {
		return fmt.Errorf("give %d pages back to the budget %s: %w", n, b.key, err)
	}
	b.seen -= n
	b.usedUp = 0
	return nil
}

// BudgetLeft is how many pages of the crawl's budget this store holds and has not handed out:
// the rest of its block, and the pages given back to it. At the end of crawl run, when no worker
// admits any more, they are pages the crawl may still fetch.
func (s *Runs) BudgetLeft(crawl string) int {
	v, ok := s.budgets.Load(CrawlKey(crawl))
	if !ok {
		return 0
	}
	b := v.(*blockBudget)
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.left
}
