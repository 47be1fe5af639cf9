package crawlstate

import (
	"context"
	"errors"
	"testing"
	"time"

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

// TestTheBudgetCountsTheMetricSeriesForTheCrawlsTime: the budget reads the same totals as the
// meter's: the crawl's ledger and the custom metric series for the time since it started, which
// no invocation books (WithMetricSeries). An hour of 5 series is 5 x $0.30 / 730 = $0.0021 (the
// stack's functions write one while a crawl runs, metrics.Steady: the count is the caller's).
func TestTheBudgetCountsTheMetricSeriesForTheCrawlsTime(t *testing.T) {
	ctx := context.Background()
	prices := cost.DefaultPrices()
	hour := 5 * prices.CustomMetricMonth.USD / cost.HoursPerMonth
	for _, tt := range []struct {
		name    string
		series  int
		started bool
		want    error
	}{
		{"5 series for an hour", 5, true, ErrBudgetSpent},
		{"metrics off", 0, true, nil},
		{"no start on record", 5, false, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, c := newStore(t, WithMetricSeries(tt.series))
			if tt.started {
				if err := s.MarkStarted(ctx, "c"); err != nil {
					t.Fatal(err)
				}
			}
			// 1,000 write units, $0.000625; 10 URLs seen and fetched, none pending.
			if err := s.AddCost(ctx, "c", cost.Units{DynamoDBWriteUnits: 1000}); err != nil {
				t.Fatal(err)
			}
			if err := s.count(ctx, "c", map[string]int64{"seen": 10, string(Fetched): 10}); err != nil {
				t.Fatal(err)
			}
			c.t = c.t.Add(time.Hour)
			// A budget between the ledger alone and the ledger with an hour of the series.
			budget := 0.000625 + hour/2
			if err := s.BudgetOpen(ctx, "c", budget, prices); !errors.Is(err, tt.want) {
				t.Errorf("$0.000625 booked and %d series for an hour ($%.6f) against $%.6f: %v, want %v", tt.series, hour, budget, err, tt.want)
			}
		})
	}
}
