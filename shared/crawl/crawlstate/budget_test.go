package crawlstate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// testBudgetInBlocks: a store takes the crawl's budget in blocks, one write each, and hands the
// pages out one by one; a budget of 100 pages or less is taken page by page.
func testBudgetInBlocks(t *testing.T, tb table.Table) {
	ctx := context.Background()
	tests := []struct {
		maxPages, reserve, wantWrites int
		wantTaken                     int64
	}{
		{maxPages: 10_000, reserve: 250, wantWrites: 3, wantTaken: 300},
		{maxPages: 1_000_000, reserve: 2500, wantWrites: 3, wantTaken: 3000},
		{maxPages: 50, reserve: 3, wantWrites: 3, wantTaken: 3},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.maxPages), func(t *testing.T) {
			crawl := crawlName(t)
			wc := &writeCount{Table: tb}
			s := New(wc)
			for i := range tt.reserve {
				if err := s.ReserveBudget(ctx, crawl, "a.test", tt.maxPages, 0); err != nil {
					t.Fatalf("page %d: %v", i, err)
				}
			}
			if n := wc.writes(CrawlKey(crawl)); n != tt.wantWrites {
				t.Errorf("%d pages took %d writes of the crawl item, want %d", tt.reserve, n, tt.wantWrites)
			}
			it, err := tb.Get(ctx, CrawlKey(crawl))
			if err != nil {
				t.Fatal(err)
			}
			if got := it.Int(attrBudget); got != tt.wantTaken {
				t.Errorf("pages taken in the table = %d, want %d", got, tt.wantTaken)
			}
		})
	}
	t.Run("AHostOverItsBudgetGivesThePageBack", func(t *testing.T) {
		crawl := crawlName(t)
		s := New(tb)
		if err := s.ReserveBudget(ctx, crawl, "trap.test", 1000, 1); err != nil {
			t.Fatal(err)
		}
		for range 20 {
			if err := s.ReserveBudget(ctx, crawl, "trap.test", 1000, 1); errclass.Of(err) != errclass.Trap {
				t.Fatalf("host over budget = %v, want a trap error", err)
			}
		}
		for i := range 9 { // the rest of the first block of 10
			if err := s.ReserveBudget(ctx, crawl, fmt.Sprint(i, ".test"), 1000, 1); err != nil {
				t.Fatal(err)
			}
		}
		it, err := tb.Get(ctx, CrawlKey(crawl))
		if err != nil || it.Int(attrBudget) != 10 {
			t.Errorf("pages taken = %d, %v; want one block of 10 (the trap's pages given back)", it.Int(attrBudget), err)
		}
	})
	t.Run("WritesOverAWholeBudget", func(t *testing.T) {
		crawl := crawlName(t)
		wc := &writeCount{Table: tb}
		s := New(wc)
		granted := 0
		for s.ReserveBudget(ctx, crawl, "a.test", 10_000, 0) == nil {
			granted++
		}
		// 92 blocks of 100, shrinking blocks for the last 800 pages, and one page at a time
		// for the last 15: see tailShare.
		if n := wc.writes(CrawlKey(crawl)); granted != 10_000 || n > 150 {
			t.Errorf("granted %d pages of 10,000 with %d writes, want all with at most 150", granted, n)
		}
		t.Logf("a budget of 10,000 pages took %d writes of the crawl item", wc.writes(CrawlKey(crawl)))
	})
}

// testBudgetNeverExceeded: stores (containers) that reserve at once, each from several
// goroutines (the handlers of crawl run share one store), never grant more than maxPages in all;
// and since each uses its block before it takes another and all go on until the budget is used
// up, they grant all of it. A host's budget: testHostBudgetAtItsEdges.
func testBudgetNeverExceeded(t *testing.T, tb table.Table) {
	t.Run("crawl", func(t *testing.T) {
		crawl := crawlName(t)
		const budget = 700
		if got := raceForBudget(t, tb, crawl, budget, 0, 4, 3); got != budget {
			t.Errorf("granted %d pages of a budget of %d", got, budget)
		}
		if got := takenIn(t, tb, crawl); got != budget {
			t.Errorf("pages taken in the table = %d; want %d", got, budget)
		}
	})
	t.Run("host", func(t *testing.T) { testHostBudgetAtItsEdges(t, tb) })
}

// raceForBudget has stores of workers each reserve pages of host a.test at once until the
// crawl's budget (maxPages) or the host's (maxPerHost) refuses them, and returns how many pages
// they were granted in all.
func raceForBudget(t *testing.T, tb table.Table, crawl string, maxPages, maxPerHost, stores, workers int) int64 {
	t.Helper()
	ctx := context.Background()
	var granted atomic.Int64
	var wg sync.WaitGroup
	for range stores {
		s := New(tb)
		for range workers {
			wg.Go(func() {
				for {
					err := s.ReserveBudget(ctx, crawl, "a.test", maxPages, maxPerHost)
					if errors.Is(err, ErrBudget) || errclass.Of(err) == errclass.Trap {
						return
					}
					if err != nil {
						t.Error(err)
						return
					}
					granted.Add(1)
				}
			})
		}
	}
	wg.Wait()
	return granted.Load()
}

// testBudgetLeftUnusedIsBounded: stores that go while their blocks still hold pages leave those
// unused, at most a block less one each; the rest of the budget is still granted, and never more.
func testBudgetLeftUnusedIsBounded(t *testing.T, tb table.Table) {
	ctx := context.Background()
	crawl := crawlName(t)
	const maxPages, gone = 2000, 5 // blocks of 20
	granted := 0
	for range gone {
		if err := New(tb).ReserveBudget(ctx, crawl, "a.test", maxPages, 0); err != nil {
			t.Fatal(err)
		}
		granted++ // one page used, the rest of its block gone with the store
	}
	s := New(tb)
	for s.ReserveBudget(ctx, crawl, "a.test", maxPages, 0) == nil {
		granted++
	}
	lost := maxPages - granted
	if lost < 0 || lost > gone*(BlockSize(maxPages)-1) {
		t.Errorf("granted %d of %d pages: %d left unused by %d gone stores, want 0 to %d",
			granted, maxPages, lost, gone, gone*(BlockSize(maxPages)-1))
	}
}
