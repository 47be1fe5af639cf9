package crawlstate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/port/table"
	"github.com/crawlstack/crawlstack/shared/port/table/tabletest"
)

// pagesIn is the count of pages taken on a budget item of the table (0 when there is none).
func pagesIn(t *testing.T, tb table.Table, key table.Key) int64 {
	t.Helper()
	it, err := tb.Get(context.Background(), key)
	if errors.Is(err, table.ErrNotFound) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return it.Int(attrPages)
}

// writesOf adds up the writes of every key whose sort key starts with prefix.
func (w *writeCount) writesOf(prefix string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for k, c := range w.n {
		if strings.HasPrefix(k.Sort, prefix) {
			n += c
		}
	}
	return n
}

// testHostsFarFromTheirCapCostNoWrite: two stores (containers) admit 3 pages of each of 50 hosts
// under the default host budget of 100,000 pages. The hosts' budgets cost a write per store (its
// allowance), none per host: the oracle is the writes the table received of every b# item. A
// store past its allowance for a host takes the host's pages from its item, in blocks.
func testHostsFarFromTheirCapCostNoWrite(t *testing.T, tb table.Table) {
	ctx := context.Background()
	t.Run("ManySmallHosts", func(t *testing.T) {
		crawl := crawlName(t)
		wc := &writeCount{Table: tb}
		for range 2 {
			s := New(wc)
			for h := range 50 {
				for p := range 3 {
					if err := s.ReserveBudget(ctx, crawl, fmt.Sprint(h, ".test"), 0, 100_000); err != nil {
						t.Fatalf("host %d, page %d: %v", h, p, err)
					}
				}
			}
		}
		if n := wc.writesOf(BudgetKind); n != 2 {
			t.Errorf("3 pages of each of 50 hosts, admitted by 2 stores, took %d writes of budget items, want 2 (an allowance per store)", n)
		}
		if n := wc.writes(budgetKey(crawl, "0.test")); n != 0 {
			t.Errorf("a host of 6 pages took %d writes of its budget item, want none", n)
		}
		if got := pagesIn(t, tb, allowanceKey(crawl)); got != 2000 {
			t.Errorf("the allowances taken count %d pages, want two of 1,000", got)
		}
	})
	t.Run("PastTheAllowance", func(t *testing.T) {
		crawl := crawlName(t)
		wc := &writeCount{Table: tb}
		s := New(wc)
		const maxPerHost = 10_000 // an allowance of 100 pages a host; the item holds 9,600, blocks of 96
		for i := range 250 {
			if err := s.ReserveBudget(ctx, crawl, "big.test", 0, maxPerHost); err != nil {
				t.Fatalf("page %d: %v", i, err)
			}
		}
		if n := wc.writes(budgetKey(crawl, "big.test")); n != 2 {
			t.Errorf("150 pages past the allowance took %d writes of the host's item, want 2 (blocks of 96)", n)
		}
		if got := pagesIn(t, tb, budgetKey(crawl, "big.test")); got != 192 {
			t.Errorf("the host's item counts %d pages, want two blocks of 96", got)
		}
	})
}

// testHostBudgetAtItsEdges: more stores than take an allowance (6 of 3 workers each, 4 with an
// allowance) race for one host's budget of 700 pages until it is used up. They grant exactly 700:
// the allowances' 4x7 pages, and the 672 of the host's item; never more.
func testHostBudgetAtItsEdges(t *testing.T, tb table.Table) {
	crawl := crawlName(t)
	const budget = 700
	perStore, all := HostAllowance(budget)
	if perStore != 7 || all != 28 {
		t.Fatalf("HostAllowance(%d) = %d, %d; want 7, 28", budget, perStore, all)
	}
	granted := raceForBudget(t, tb, crawl, 0, budget, 6, 3)
	if granted != budget {
		t.Errorf("granted %d pages of a host budget of %d", granted, budget)
	}
	if got := pagesIn(t, tb, allowanceKey(crawl)); got != int64(all) {
		t.Errorf("the allowances count %d pages, want %d (4 stores of 6 took one)", got, all)
	}
	if got := pagesIn(t, tb, budgetKey(crawl, "a.test")); got != budget-int64(all) {
		t.Errorf("the host's item counts %d pages, want %d", got, budget-all)
	}
}

// testHostBudgetLeftUnusedIsBounded: stores that go after a page of the host leave their
// allowances and blocks unused; a last store then takes the rest of the host's item. The host
// gets neither more than its budget, nor less than it less the allowances and the gone stores'
// blocks.
func testHostBudgetLeftUnusedIsBounded(t *testing.T, tb table.Table) {
	ctx := context.Background()
	crawl := crawlName(t)
	const budget, gone = 700, 6
	_, all := HostAllowance(budget)
	granted := 0
	for range gone {
		if err := New(tb).ReserveBudget(ctx, crawl, "a.test", 0, budget); err != nil {
			t.Fatal(err)
		}
		granted++
	}
	s := New(tb)
	for {
		err := s.ReserveBudget(ctx, crawl, "a.test", 0, budget)
		if errclass.Of(err) == errclass.Trap {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		granted++
	}
	lost, most := budget-granted, all+gone*(BlockSize(budget-all)-1)
	if lost < 0 || lost > most {
		t.Errorf("granted %d of a host's %d pages: %d left unused by %d gone stores, want 0 to %d", granted, budget, lost, gone, most)
	}
}

// testReplayedAllowanceCountsOnce: every write of the allowance item is replayed; the first is
// applied and its answer lost, and the second fails before it is applied. Five stores each admit
// 10 pages of a host whose budget gives an allowance of 10: the four that took an allowance
// (the first once it learns its lost write was applied) write nothing of the host, the fifth
// takes blocks of the host's item; and the item of allowances counts each once.
func testReplayedAllowanceCountsOnce(t *testing.T, tb table.Table) {
	ctx := context.Background()
	crawl := crawlName(t)
	const maxPerHost = 1000
	perStore, all := HostAllowance(maxPerHost)
	f := tabletest.NewFaults(tb,
		tabletest.Rule{Op: "update", Key: allowanceKey(crawl), Nth: 1, Lost: true},
		tabletest.Rule{Op: "update", Key: allowanceKey(crawl), Nth: 2, Fail: true},
		tabletest.Rule{Op: "update", Key: allowanceKey(crawl)})
	hostWrites := make([]int, 5)
	for i := range hostWrites {
		wc := &writeCount{Table: f}
		s := New(wc)
		for p := 0; p < perStore; {
			err := s.ReserveBudget(ctx, crawl, "h.test", 0, maxPerHost)
			if errors.Is(err, tabletest.ErrInjected) {
				continue // the table failed: the frontier's message comes again
			}
			if err != nil {
				t.Fatalf("store %d, page %d: %v", i, p, err)
			}
			p++
		}
		hostWrites[i] = wc.writes(budgetKey(crawl, "h.test"))
	}
	if got := strings.Join(f.Injected(), "\n"); !strings.Contains(got, "lose") || !strings.Contains(got, "fail") || !strings.Contains(got, "replay") {
		t.Fatalf("faults injected:\n%s\nwant a lost answer, a failure and replays", got)
	}
	if got := pagesIn(t, tb, allowanceKey(crawl)); got != int64(all) {
		t.Errorf("the allowances count %d pages, want %d: four of %d, each once", got, all, perStore)
	}
	if fmt.Sprint(hostWrites[:4]) != "[0 0 0 0]" || hostWrites[4] == 0 {
		t.Errorf("writes of the host's item by each store: %v; want none by the four with an allowance, some by the fifth", hostWrites)
	}
	if got, want := pagesIn(t, tb, budgetKey(crawl, "h.test")), int64(2*BlockSize(maxPerHost-all)); got != want {
		t.Errorf("the host's item counts %d pages, want the fifth store's two blocks, %d", got, want)
	}
}
