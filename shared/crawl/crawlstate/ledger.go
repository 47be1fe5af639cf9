package crawlstate

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/cost"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// AddCost adds u, billed units spent on the crawl, to its ledger: counters kept and written like
// the others (see Flush), so that the crawl record shows what the crawl has cost so far.
func (s *Runs) AddCost(ctx context.Context, crawl string, u cost.Units) error {
	c := u.Counters()
	if len(c) == 0 {
		return nil
	}
	return s.count(ctx, crawl, c)
}

// StopBudget is the reason recorded on a crawl whose money budget is spent (Counters.Stopped).
const StopBudget = "budget"

// ErrBudgetSpent is BudgetOpen's answer once the crawl's ledger reaches its budget.
var ErrBudgetSpent = errclass.Errorf(errclass.Budget, "the crawl's budget is spent")

// DefaultCostCheck is how often a store reads a crawl's ledger to check its budget.
const DefaultCostCheck = 10 * time.Second

// spent is what a store last read of a crawl's ledger.
type spent struct {
	mu   sync.Mutex
	at   time.Time
	cost float64 // projected (see projected)
	done bool    // the budget is spent: it stays so
}

// projected is what the crawl will have cost once the URLs it has admitted are done: its ledger
// and series custom metric series for its time so far (at now), plus its pending URLs at the
// average cost of a page so far. A budget checked against the ledger alone would let a crawl
// admit a whole frontier's worth of URLs past it, all fetched to the end.
func projected(c Counters, prices cost.Prices, series int, now time.Time) float64 {
	u := c.Cost
	if !c.Started.IsZero() && now.After(c.Started) {
		u.MetricSeriesHours += cost.MetricSeriesHours(series, now.Sub(c.Started))
	}
	cost := prices.Cost(u).Total
	if done := c.Fetched + c.Skipped + c.Failed; done > 0 && c.Pending() > 0 {
		cost += float64(c.Pending()) * cost / float64(done)
	}
	return cost
}

// BudgetOpen returns ErrBudgetSpent once the crawl's ledger at prices, with the URLs already
// admitted costed at the average so far (see projected), reaches usd (usd 0: no budget). It reads
// the ledger at most once per the interval of WithCostCheck (DefaultCostCheck when 0) for each
// crawl, so a crawl may admit past its budget what it admits in that time, and its handlers may
// have metered units they have not written yet: a budget is a bound to within some seconds of
// crawling, not to the cent.
// The first store to find the budget spent marks the crawl record stopped (Counters.Stopped).
func (s *Runs) BudgetOpen(ctx context.Context, crawl string, usd float64, prices cost.Prices) error {
	if usd <= 0 {
		return nil
	}
	v, _ := s.spent.LoadOrStore(crawl, &spent{})
	sp := v.(*spent)
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.done {
		return ErrBudgetSpent
	}
	every := s.costCheck
	if every <= 0 {
		every = DefaultCostCheck
	}
	if now := s.now(); sp.at.IsZero() || now.Sub(sp.at) >= every {
		c, err := s.Counters(ctx, crawl)
		if err != nil {
			return fmt.Errorf("check the budget of crawl %s: %w", crawl, err)
		}
		sp.at, sp.cost = now, projected(c, prices, s.metricSeries, now)
	}
	if sp.cost < usd {
		return nil
	}
	if err := s.markStopped(ctx, crawl, StopBudget); err != nil {
		return err
	}
	sp.done = true
	return ErrBudgetSpent
}

// markStopped records on the crawl item why the crawl stopped admitting URLs, once.
func (s *Runs) markStopped(ctx context.Context, crawl, reason string) error {
	_, err := s.t.Update(ctx, CrawlKey(crawl), table.Update{Set: map[string]any{
		attrStopped: reason, attrStoppedAt: s.now().UnixMilli(),
	}}, table.NotExists(attrStopped))
	if _, already := table.IsConditionFailed(err); already {
		return nil
	}
	if err != nil {
		return fmt.Errorf("mark crawl %s stopped: %w", crawl, err)
	}
	return nil
}

// CountBudgetRefusal counts a link that was not admitted because the crawl's budget is spent. It
// is not recorded on an item: a crawl that goes on discovering links would pay a write for each.
func (s *Runs) CountBudgetRefusal(ctx context.Context, crawl string) error {
	return s.count(ctx, crawl, map[string]int64{"class_" + string(errclass.Budget): 1})
}
