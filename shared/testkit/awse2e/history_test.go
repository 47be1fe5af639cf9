package awse2e

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/app/cli"
	"github.com/crawlstack/crawlstack/shared/aws/awsconfig"
	"github.com/crawlstack/crawlstack/shared/crawl/cost"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/observe/meter"
	"github.com/crawlstack/crawlstack/shared/testkit/e2etest"
	"github.com/crawlstack/crawlstack/shared/testkit/tablefill"
)

// historyItems is how many items of other crawls the full table holds before its first crawl.
const historyItems = 100_000

// fillTimeout bounds the writing of the history: DynamoDB Local takes some 20 to 30 s for it.
const fillTimeout = 2 * time.Minute

// TestIntegrationCostDoesNotGrowWithTheTable proves DESIGN invariant 12 (issue 42): a crawl of a
// 200-page site through `crawl run --backend aws` on the emulators reads and writes the same
// DynamoDB units per page, to within 10%, on an empty table as on a table that holds 100,000 items
// of other crawls (shared/testkit/tablefill); and so do `crawl status`, `crawl failures` and
// `crawl export` of it. The units are the meter's (shared/observe/meter), from DynamoDB's own
// answers: an account around each command counts every call the command made.
//
// A crawl's reads move from run to run by some 6% on the same table: a Links message that finds
// a URL still queued reads its group, one that finds it fetched does not, and which it finds is a
// race between parse and fetch. So the test crawls three times on each table, fresh empty tables
// and crawls taking turns with crawls on the one full table, and compares the sums. A per-crawl
// read of every crawl's URL items costs some 10,000 read units on the full table (tried once with
// EachInCrawl made to read them: 51 units a page), where the crawl reads about 170 in all.
func TestIntegrationCostDoesNotGrowWithTheTable(t *testing.T) {
	const pages, links, runs = 200, 6, 3
	full := newHarness(t, pages, links)
	full.setup(cli.QueueSettings{Visibility: 5 * time.Second, MaxReceiveCount: 5})
	fillHistory(t, full, historyItems) // it warms the emulators too, for the first crawl
	var empty, fullSum crawlCosts
	for i := range runs {
		e := newHarness(t, pages, links)
		e.setup(cli.QueueSettings{Visibility: 5 * time.Second, MaxReceiveCount: 5})
		c := measureCrawl(t, e, fmt.Sprintf("empty-%d.txt", i))
		t.Logf("run %d, empty table: %s", i+1, c.perPage(pages))
		empty = empty.add(c)
		// Another site, from a seed file of another name: another crawl in the same table, and no
		// recrawl of the one before (a seed file's next crawl reads its previous crawl's pages).
		full.Site = e2etest.NewSite(t, pages, links)
		c = measureCrawl(t, full, fmt.Sprintf("full-%d.txt", i))
		t.Logf("run %d, full table:  %s", i+1, c.perPage(pages))
		fullSum = fullSum.add(c)
	}
	for _, c := range []struct {
		what        string
		empty, full cost.Units
	}{
		{"the crawl (crawl run)", empty.crawl, fullSum.crawl},
		{"crawl status", empty.status, fullSum.status},
		{"crawl failures", empty.failures, fullSum.failures},
		{"crawl export", empty.export, fullSum.export},
	} {
		for _, u := range []struct {
			unit        string
			empty, full float64
		}{
			{"DynamoDB read units", c.empty.DynamoDBReadUnits, c.full.DynamoDBReadUnits},
			{"DynamoDB write units", c.empty.DynamoDBWriteUnits, c.full.DynamoDBWriteUnits},
		} {
			if u.empty == 0 && u.full == 0 {
				// status and failures write nothing, and export reads the records in S3 alone.
				t.Logf("%s: no %s on either table", c.what, u.unit)
				continue
			}
			t.Logf("%s: %s per page: %.3f on empty tables, %.3f with %d items of other crawls (%.0f and %.0f in %d runs)",
				c.what, u.unit, u.empty/(runs*pages), u.full/(runs*pages), historyItems, u.empty, u.full, runs)
			if u.empty == 0 || math.Abs(u.full-u.empty) > 0.1*u.empty {
				t.Errorf("%s: %.0f %s in %d runs with %d items of other crawls in the table, %.0f on empty tables: more than 10%% apart",
					c.what, u.full, u.unit, runs, historyItems, u.empty)
			}
		}
	}
	t.Logf("the crawls' own ledgers: %.3f read and %.3f write units per page on empty tables, %.3f and %.3f on the full one",
		empty.ledger.DynamoDBReadUnits/(runs*pages), empty.ledger.DynamoDBWriteUnits/(runs*pages),
		fullSum.ledger.DynamoDBReadUnits/(runs*pages), fullSum.ledger.DynamoDBWriteUnits/(runs*pages))
}

// fillHistory writes items of other crawls into h's table.
func fillHistory(t *testing.T, h *harness, items int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), fillTimeout)
	defer cancel()
	res, err := tablefill.Fill(ctx, awsconfig.NewClients(h.cfg).DynamoDB, h.be.TableName, tablefill.Options{Items: items})
	if err != nil {
		t.Fatalf("fill the table with %d items of other crawls: %v", items, err)
	}
	t.Logf("the full table holds %d items of %d other crawls, %.1f MB, written in %v",
		res.Items, res.Crawls, float64(res.Bytes)/1e6, res.Elapsed.Round(100*time.Millisecond))
}

// crawlCosts are the units of one crawl and of the commands run after it.
type crawlCosts struct {
	// crawl is what `crawl run` made in all; ledger what the crawl's record says its handlers made.
	crawl, ledger, status, failures, export cost.Units
}

func (c crawlCosts) add(d crawlCosts) crawlCosts {
	return crawlCosts{c.crawl.Add(d.crawl), c.ledger.Add(d.ledger), c.status.Add(d.status), c.failures.Add(d.failures), c.export.Add(d.export)}
}

// perPage says the DynamoDB units per page of the crawl and of each command.
func (c crawlCosts) perPage(pages int) string {
	n := float64(pages)
	f := func(u cost.Units) string {
		return fmt.Sprintf("%.3f RRU %.3f WRU", u.DynamoDBReadUnits/n, u.DynamoDBWriteUnits/n)
	}
	return fmt.Sprintf("crawl %s (its ledger %s); status %s; failures %s; export %s, %d S3 requests",
		f(c.crawl), f(c.ledger), f(c.status), f(c.failures), f(c.export), c.export.S3ClassA+c.export.S3ClassB)
}

// measureCrawl crawls h's site through `crawl run --backend aws` on h's queues, table and bucket,
// which are set up already, from a seed file of the name seed, then runs `crawl status`, `crawl failures` and `crawl export` of the
// crawl, each with a meter account of its own around it.
func measureCrawl(t *testing.T, h *harness, seed string) crawlCosts {
	t.Helper()
	// The crawl command uses the queues, table and bucket as a deployed stack's, and creates nothing.
	h.queueEnv()
	h.setenv()
	seedFile := filepath.Join(t.TempDir(), seed)
	if err := os.WriteFile(seedFile, []byte(h.Site.URL+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var c crawlCosts
	var sum cli.Summary
	c.crawl = metered(func(ctx context.Context) {
		sum = runCrawlIn(ctx, t, []string{"run", "--backend", "aws", "--json", "--quiet", "--allow-net", "127.0.0.0/8",
			"--host-rps", "0", "--host-concurrency", "0", "--visibility", "5s", "--max-receive", "5",
			"--concurrency", "8", seedFile})
	})
	if !sum.Finished || sum.Fetched != int64(h.Site.Pages) || sum.Failed != 0 {
		t.Fatalf("summary = %+v: want finished with %d fetched and none failed", sum, h.Site.Pages)
	}
	ctx, cancel := context.WithTimeout(context.Background(), crawlTimeout)
	defer cancel()
	counters, err := crawlstate.New(h.be.Table).Counters(ctx, sum.Crawl)
	if err != nil {
		t.Fatalf("read the crawl's counters: %v", err)
	}
	c.ledger = counters.Cost
	c.status = metered(func(ctx context.Context) { runCommand(ctx, t, "status", "--backend", "aws", sum.Crawl) })
	c.failures = metered(func(ctx context.Context) { runCommand(ctx, t, "failures", "--backend", "aws", sum.Crawl) })
	out := filepath.Join(t.TempDir(), "pages.csv")
	c.export = metered(func(ctx context.Context) { runCommand(ctx, t, "export", "--backend", "aws", "-o", out, sum.Crawl) })
	return c
}

// metered runs fn with a meter account in its context, and returns the units it counted: every
// metered SDK call that fn's command made with the context (the AWS backend meters its clients).
func metered(fn func(ctx context.Context)) cost.Units {
	acct := meter.New()
	ctx, cancel := context.WithTimeout(meter.WithAccount(context.Background(), acct), crawlTimeout)
	defer cancel()
	fn(ctx)
	return acct.Snapshot()
}

// runCommand runs the crawl command with args, and fails the test unless it exits 0.
func runCommand(ctx context.Context, t *testing.T, args ...string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := cli.Main(ctx, args, &stdout, &stderr); code != cli.ExitOK {
		t.Fatalf("crawl %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, &stdout, &stderr)
	}
}
