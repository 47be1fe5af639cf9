package crawlstate

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/crawlstack/crawlstack/shared/port/table"
	"github.com/crawlstack/crawlstack/shared/port/table/tabletest"
)

// testReplayedBudgetWritesCountOnce: every write of the crawl's budget is applied and sent again,
// one is applied and its answer lost for good, and one fails before it is applied. The table's
// count of pages taken is the pages the stores handed out and hold: the budget is never taken or
// given back twice, so a crawl admits neither more than --max-pages nor fewer.
func testReplayedBudgetWritesCountOnce(t *testing.T, tb table.Table) {
	ctx := context.Background()
	crawl := crawlName(t)
	const maxPages = 1000 // blocks of 10
	key := CrawlKey(crawl)
	f := tabletest.NewFaults(tb,
		tabletest.Rule{Op: "update", Key: key, Nth: 3, Lost: true},
		tabletest.Rule{Op: "update", Key: key, Nth: 5, Fail: true},
		tabletest.Rule{Op: "update", Key: key})
	admits, fetches := New(f), New(f)
	used := 0
	for used < 55 {
		err := admits.ReserveBudget(ctx, crawl, "a.test", maxPages, 0)
		if errors.Is(err, tabletest.ErrInjected) {
			continue // the table failed: the frontier's message comes again
		}
		if err != nil {
			t.Fatal(err)
		}
		used++
	}
	// A fetch container gives back 25 pages (URLs skipped), a block of 10 at a time.
	for range 25 {
		if err := fetches.ReturnPages(ctx, crawl, 1, maxPages); err != nil && !errors.Is(err, tabletest.ErrInjected) {
			t.Fatal(err)
		}
	}
	held := admits.BudgetLeft(crawl)
	for _, s := range []*Store{admits, fetches} {
		for {
			if err := s.ReleaseBudgets(ctx); err == nil {
				break
			} else if !errors.Is(err, tabletest.ErrInjected) {
				t.Fatal(err)
			}
		}
	}
	if got := strings.Join(f.Injected(), "\n"); !strings.Contains(got, "lose") || !strings.Contains(got, "fail") || !strings.Contains(got, "replay") {
		t.Fatalf("faults injected:\n%s\nwant a lost answer, a failure and replays", got)
	}
	if got, want := takenIn(t, tb, crawl), int64(used-25); got != want {
		t.Errorf("the budget counts %d pages taken, want %d: the %d used less the 25 given back (the admitting store held %d unused until its release)", got, want, used, held)
	}
}
