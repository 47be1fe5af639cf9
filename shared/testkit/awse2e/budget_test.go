package awse2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
)

// TestIntegrationBudgetStopsTheCrawl runs `crawl run --backend aws --budget-usd` on a site far
// bigger than the budget buys: the run meters its own calls, stops admitting URLs once the bill
// reaches the budget, drains what it admitted, and ends with every URL it admitted in a terminal
// state and the budget named as the reason, in the summary and in the crawl record.
func TestIntegrationBudgetStopsTheCrawl(t *testing.T) {
	// Dollars: a few tens of pages through the AWS adapters (`crawl run` books no Lambda compute,
	// only requests). The crawl admits past the budget what it admits between two checks of the
	// ledger, its in-flight invocations write their units after it, and the requests a page takes
	// move with the machine's load (smaller batches, more WARC files and receives): in 13 runs on
	// this machine at load 1 to 17 it ended at 0.6 to 2.4 times the budget, and the whole site
	// costs four to ten times it. It may also stop short: the projection (crawlstate.projected)
	// costs the admitted URLs at the average page so far, and the first check's average carries
	// the crawl's start (its seeds, its queues) over a few pages; a `.ci/run` beside a cost run
	// ended at 0.49 times the budget (39 pages), four runs alone after it at 0.77 to 1.06.
	const budget = 0.0006
	h := newHarness(t, 400, 6)
	h.setenv()
	seedFile := filepath.Join(t.TempDir(), "seeds.txt")
	if err := os.WriteFile(seedFile, []byte(h.Site.URL+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := runCrawl(t, []string{"run", "--backend", "aws", "--json", "--quiet", "--allow-net", "127.0.0.0/8",
		"--host-rps", "20", "--host-concurrency", "0", "--visibility", "5s", "--max-receive", "5",
		"--concurrency", "8", "--budget-usd", fmt.Sprint(budget), seedFile})
	t.Logf("summary: fetched %d of %d pages, cost $%.6f of $%v, %d links not admitted",
		sum.Fetched, h.Site.Pages, sum.CostUSD, budget, sum.Classes[string(errclass.Budget)])
	if !sum.Finished || sum.Stopped != crawlstate.StopBudget || sum.BudgetUSD != budget {
		t.Errorf("summary: finished %v, stopped %q, budget %v; want finished, stopped by the budget of %v",
			sum.Finished, sum.Stopped, sum.BudgetUSD, budget)
	}
	// The crawl stops admitting once what it spent and what its admitted URLs will cost reach the
	// budget, checked every second: it ends near the budget, not at a multiple of it, and not at a
	// small part of it.
	if sum.CostUSD < budget/4 || sum.CostUSD > 3*budget {
		t.Errorf("metered cost $%v: want it near the budget of $%v", sum.CostUSD, budget)
	}
	if sum.Fetched == 0 || sum.Fetched >= int64(h.Site.Pages)/2 || sum.Classes[string(errclass.Budget)] == 0 {
		t.Errorf("fetched %d of %d pages with %d links refused for the budget: want the budget to cut the crawl short",
			sum.Fetched, h.Site.Pages, sum.Classes[string(errclass.Budget)])
	}
	if sum.Pending != 0 || sum.Failed != 0 || len(sum.DeadLetters) != 0 {
		t.Errorf("summary %+v: want nothing pending, failed or dead", sum)
	}
	// The table, read apart from the run: every admitted URL ended, and the record says why the
	// crawl stopped.
	h.attach()
	st := crawlstate.New(h.be.Table)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	items := 0
	if err := st.EachURL(ctx, sum.Crawl, func(u crawlstate.URL) error {
		items++
		if !u.State.Terminal() {
			t.Errorf("url %s is still %s", u.URL, u.State)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	c, err := st.Counters(ctx, sum.Crawl)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ledger units: %+v", c.Cost)
	if c.Stopped != crawlstate.StopBudget || c.Cost.DynamoDBWriteUnits == 0 || c.Cost.SQSRequests == 0 || c.Cost.S3ClassA == 0 {
		t.Errorf("crawl record: stopped %q, ledger %+v; want stopped by the budget and the run's units", c.Stopped, c.Cost)
	}
	if r := h.Site.Repeats(); items != int(sum.Seen) || len(r) != 0 {
		t.Errorf("%d URL items for %d seen; pages fetched twice: %v", items, sum.Seen, r)
	}
}
