package crawlstate

import (
	"context"
	"errors"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/cost"
)

func TestBudgetStopsAdmissionsOnceTheLedgerReachesIt(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t)
	prices := cost.DefaultPrices()
	// A million write units: $0.625 at list price.
	if err := s.AddCost(ctx, "c", cost.Units{DynamoDBWriteUnits: 1_000_000}); err != nil {
		t.Fatal(err)
	}
	if err := s.count(ctx, "c", map[string]int64{"seen": 10, string(Fetched): 10}); err != nil {
		t.Fatal(err)
	}
	if err := s.BudgetOpen(ctx, "c", 1, prices); err != nil {
		t.Fatalf("$0.625 spent of $1: %v, want open", err)
	}
	// Ten more URLs admitted: at the average so far they will cost as much again, $1.25 in all.
	if err := s.count(ctx, "c", map[string]int64{"seen": 10}); err != nil {
		t.Fatal(err)
	}
	if err := s.BudgetOpen(ctx, "c", 1, prices); err != nil {
		t.Errorf("within the check interval the ledger is not read again: %v", err)
	}
	c.t = c.t.Add(DefaultCostCheck)
	if err := s.BudgetOpen(ctx, "c", 1, prices); !errors.Is(err, ErrBudgetSpent) {
		t.Fatalf("$1.25 projected of $1: %v, want ErrBudgetSpent", err)
	}
	got, err := s.Counters(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if got.Stopped != StopBudget || got.Cost.DynamoDBWriteUnits != 1_000_000 {
		t.Errorf("crawl record: stopped %q, ledger %+v; want stopped by the budget, a million write units", got.Stopped, got.Cost)
	}
	// Another store (another container) finds the same, and the mark is written once.
	other := New(s.t, WithClock(c.now))
	if err := other.BudgetOpen(ctx, "c", 1, prices); !errors.Is(err, ErrBudgetSpent) {
		t.Errorf("another store: %v, want ErrBudgetSpent", err)
	}
	if err := s.BudgetOpen(ctx, "c", 0, prices); err != nil {
		t.Errorf("no budget: %v, want open", err)
	}
	if err := s.BudgetOpen(ctx, "d", 1, prices); err != nil {
		t.Errorf("another crawl: %v, want open", err)
	}
}
