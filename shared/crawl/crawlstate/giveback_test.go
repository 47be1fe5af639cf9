package crawlstate

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// takenIn reads the crawl budget's count of pages taken from the table.
func takenIn(t *testing.T, tb table.Table, crawl string) int64 {
	t.Helper()
	it, err := tb.Get(context.Background(), CrawlKey(crawl))
	if err != nil {
		t.Fatal(err)
	}
	return it.Int(attrBudget)
}

// grant reserves pages of the crawl's budget with s until it is refused, and returns how many
// were granted.
func grant(t *testing.T, s *Store, crawl string, maxPages int) int {
	t.Helper()
	n := 0
	for {
		err := s.ReserveBudget(context.Background(), crawl, "a.test", maxPages, 0)
		if errors.Is(err, ErrBudget) {
			return n
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
}

// testPagesGivenBack: pages given back to a store that holds a block are admitted again with no
// write; a store that holds none (a fetch container) gives them back to the table a block at a
// time, and a store that saw the budget used up looks again after usedUpRecheck; ReleaseBudgets
// gives back what a store holds. The table's count is the oracle.
func testPagesGivenBack(t *testing.T, tb table.Table) {
	ctx := context.Background()
	t.Run("ToTheStoreThatAdmits", func(t *testing.T) {
		crawl := crawlName(t)
		wc := &writeCount{Table: tb}
		s := New(wc)
		if n := grant(t, s, crawl, 50); n != 50 {
			t.Fatalf("granted %d of 50", n)
		}
		writes := wc.writes(CrawlKey(crawl))
		if err := s.ReturnPages(ctx, crawl, 5, 50); err != nil {
			t.Fatal(err)
		}
		if n := grant(t, s, crawl, 50); n != 5 {
			t.Errorf("granted %d pages after 5 were given back, want 5", n)
		}
		if n := wc.writes(CrawlKey(crawl)) - writes; n != 0 {
			t.Errorf("giving 5 pages back and granting them again took %d writes, want none", n)
		}
		if got := takenIn(t, tb, crawl); got != 50 {
			t.Errorf("pages taken in the table = %d, want 50", got)
		}
	})
	t.Run("FromAFetchStoreInBlocks", func(t *testing.T) {
		crawl := crawlName(t)
		const maxPages = 10_000 // blocks of 100
		now := time.Now()
		admit := New(tb, WithClock(func() time.Time { return now }))
		if n := grant(t, admit, crawl, maxPages); n != maxPages {
			t.Fatalf("granted %d of %d", n, maxPages)
		}
		wc := &writeCount{Table: tb}
		fetch := New(wc)
		for range 99 {
			if err := fetch.ReturnPages(ctx, crawl, 1, maxPages); err != nil {
				t.Fatal(err)
			}
		}
		if n := wc.writes(CrawlKey(crawl)); n != 0 || takenIn(t, tb, crawl) != maxPages {
			t.Errorf("99 pages given back took %d writes, and the table counts %d taken; want none and %d", n, takenIn(t, tb, crawl), maxPages)
		}
		if err := fetch.ReturnPages(ctx, crawl, 1, maxPages); err != nil {
			t.Fatal(err)
		}
		if n := wc.writes(CrawlKey(crawl)); n != 1 || takenIn(t, tb, crawl) != maxPages-100 {
			t.Errorf("the 100th page: %d writes, %d taken; want one write of the block, %d", n, takenIn(t, tb, crawl), maxPages-100)
		}
		if n := grant(t, admit, crawl, maxPages); n != 0 {
			t.Errorf("granted %d pages at once: the store saw the budget used up a moment ago and should not look", n)
		}
		now = now.Add(usedUpRecheck)
		if n := grant(t, admit, crawl, maxPages); n != 100 {
			t.Errorf("granted %d pages after the recheck, want the 100 given back", n)
		}
		if got := takenIn(t, tb, crawl); got != maxPages {
			t.Errorf("pages taken in the table = %d, want %d", got, maxPages)
		}
	})
	t.Run("ReleaseGivesBackWhatAStoreHolds", func(t *testing.T) {
		crawl := crawlName(t)
		const maxPages = 10_000
		admit, fetch := New(tb), New(tb)
		for range 40 {
			if err := admit.ReserveBudget(ctx, crawl, "a.test", maxPages, 0); err != nil {
				t.Fatal(err)
			}
		}
		if err := fetch.ReturnPages(ctx, crawl, 30, maxPages); err != nil {
			t.Fatal(err)
		}
		if err := admit.ReleaseBudgets(ctx); err != nil {
			t.Fatal(err)
		}
		if got := takenIn(t, tb, crawl); got != 40 {
			t.Errorf("after the admitting store's release: %d taken, want the 40 it granted", got)
		}
		if err := fetch.ReleaseBudgets(ctx); err != nil {
			t.Fatal(err)
		}
		if got := takenIn(t, tb, crawl); got != 10 {
			t.Errorf("after the fetch store's release: %d taken, want 40 less the 30 given back", got)
		}
	})
}

// testBudgetNeverExceededWithGiveBacks: stores admit concurrently while every third page granted
// ends skipped and is given back, to the store that granted it or through a fetch store: the
// pages kept (granted, less given back) never exceed the budget, more than the budget is granted
// in all, and once every store has released what it holds, the table counts exactly the pages kept.
func testBudgetNeverExceededWithGiveBacks(t *testing.T, tb table.Table) {
	ctx := context.Background()
	crawl := crawlName(t)
	const budget, stores, workers = 300, 3, 3
	fetch := New(tb)
	all := []*Store{fetch}
	var kept, granted, most atomic.Int64
	var wg sync.WaitGroup
	for i := range stores {
		s := New(tb)
		all = append(all, s)
		for w := range workers {
			wg.Go(func() {
				for n := 0; ; n++ {
					err := s.ReserveBudget(ctx, crawl, "a.test", budget, 0)
					if errors.Is(err, ErrBudget) {
						return
					}
					if err != nil {
						t.Error(err)
						return
					}
					granted.Add(1)
					k := kept.Add(1)
					for m := most.Load(); k > m && !most.CompareAndSwap(m, k); m = most.Load() {
					}
					if n%3 != 2 {
						continue
					}
					kept.Add(-1) // skipped: given back once done
					to := s
					if (i+w)%2 == 0 {
						to = fetch
					}
					if err := to.ReturnPages(ctx, crawl, 1, budget); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	if most.Load() > budget {
		t.Errorf("%d pages kept at once, over the budget of %d", most.Load(), budget)
	}
	if granted.Load() <= budget {
		t.Errorf("granted %d pages in all, want more than the budget of %d: the pages given back were not granted again", granted.Load(), budget)
	}
	for _, s := range all {
		if err := s.ReleaseBudgets(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := takenIn(t, tb, crawl); got != kept.Load() {
		t.Errorf("pages taken in the table = %d after every release, want the %d kept", got, kept.Load())
	}
}
