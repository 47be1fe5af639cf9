package awse2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/app/cli"
	"github.com/crawlstack/crawlstack/shared/ops/export/exporttest"
	"github.com/crawlstack/crawlstack/shared/testkit/awstest"
	"github.com/crawlstack/crawlstack/shared/testkit/e2etest"
)

// TestIntegrationCrawlFetchesEveryPageOnce crawls the site with the three handlers on the AWS
// adapters, driven by the local runner: every page fetched once, every URL terminal, every
// record stored, and a second run of the same seed file fetches nothing.
func TestIntegrationCrawlFetchesEveryPageOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 40, 6)
	h.setup(cli.QueueSettings{Visibility: 5 * time.Second, MaxReceiveCount: 5})
	h.CheckCrawlsOnce(16)
}

// TestIntegrationCrawlRunBackendAWS runs `crawl run --backend aws` as a user types it, with the
// environment naming the endpoints and the test's own table, bucket and queue prefix: the command
// creates them, crawls, and its last line is a JSON summary that says everything was fetched.
func TestIntegrationCrawlRunBackendAWS(t *testing.T) {
	h := newHarness(t, 30, 5)
	h.setenv()
	seedFile := filepath.Join(t.TempDir(), "seeds.txt")
	if err := os.WriteFile(seedFile, []byte(h.Site.URL+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "--backend", "aws", "--json", "--quiet", "--allow-net", "127.0.0.0/8",
		"--host-rps", "0", "--host-concurrency", "0", "--visibility", "5s", "--max-receive", "5",
		"--concurrency", "8", seedFile}
	sum := runCrawl(t, args)
	if !sum.Finished || sum.Fetched != int64(h.Site.Pages) || sum.Pending != 0 || sum.Failed != 0 ||
		len(sum.DeadLetters) != 0 || sum.ParseErrors != 0 {
		t.Errorf("summary = %+v: want finished, %d fetched, nothing pending, failed or dead", sum, h.Site.Pages)
	}
	if want := "s3://" + h.be.Bucket + "/"; !strings.HasPrefix(sum.Pages, want) || !strings.HasPrefix(sum.Records, want) {
		t.Errorf("pages at %q and records at %q, want both under %s", sum.Pages, sum.Records, want)
	}
	h.attach()
	h.settings(cli.QueueSettings{Visibility: 5 * time.Second, MaxReceiveCount: 5})
	h.CheckNothingLost(sum.Crawl)
	if r := h.Site.Repeats(); len(r) != 0 {
		t.Errorf("pages fetched more than once: %v", r)
	}
	checkExport(t, sum.Crawl, h.Site.Pages, h.Site.PageURL)

	// Run the same command again: it resumes the same crawl, which has nothing left to fetch.
	if awstest.Emulators() {
		// gofakes3 answers CreateBucket of an existing bucket with 409 BucketAlreadyExists (S3
		// answers the owner BucketAlreadyOwnedByYou), so the second set-up would fail there. Use the
		// queues as a deployed stack's outputs name them, which creates nothing.
		h.queueEnv()
		h.setenv()
	}
	before := h.Site.Fetched()
	again := runCrawl(t, args)
	if again.Crawl != sum.Crawl || !again.Finished || again.Fetched != sum.Fetched || again.Pending != 0 {
		t.Errorf("second run: summary = %+v, want crawl %s finished with %d fetched", again, sum.Crawl, sum.Fetched)
	}
	if r := h.Site.Repeats(); len(r) != 0 || h.Site.Fetched() != before {
		t.Errorf("a second run of the same crawl fetched again: %v", r)
	}
}

// checkExport runs `crawl export --backend aws` of crawl into a CSV file, as a user types it, and
// reads the file with csv-parse: one row for each of the site's pages, read from the bucket.
func checkExport(t *testing.T, crawl string, pages int, pageURL func(int) string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "pages.csv")
	var stdout, stderr bytes.Buffer
	if code := cli.Main(context.Background(), []string{"export", "--backend", "aws", "-o", out, crawl}, &stdout, &stderr); code != cli.ExitOK {
		t.Fatalf("crawl export --backend aws: exit %d\n%s", code, stderr.String())
	}
	got := map[string]bool{}
	for _, r := range exporttest.Read(t, "csv", out) {
		got[r["url"].(string)] = true
	}
	for i := range pages {
		if !got[pageURL(i)] {
			t.Errorf("the export has no row for page %d (%d rows)", i, len(got))
		}
	}
	if len(got) != pages {
		t.Errorf("the export has %d pages, want the site's %d", len(got), pages)
	}
}

// runCrawl runs the crawl command with args and returns the JSON summary of its last line.
func runCrawl(t *testing.T, args []string) cli.Summary {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), crawlTimeout)
	defer cancel()
	return runCrawlIn(ctx, t, args)
}

// runCrawlIn is runCrawl with the caller's context.
func runCrawlIn(ctx context.Context, t *testing.T, args []string) cli.Summary {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := cli.Main(ctx, args, &stdout, &stderr); code != cli.ExitOK {
		t.Fatalf("crawl %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, &stdout, &stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var sum cli.Summary
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatalf("the last line of stdout is not a JSON summary: %v\n%s", err, &stdout)
	}
	if sum.Crawl == "" {
		t.Fatalf("the summary names no crawl:\n%s", &stdout)
	}
	return sum
}

// TestIntegrationDuplicateDeliveriesFetchOnce sends every message of every handler twice through
// SQS: the claims in DynamoDB still let each page be fetched once.
func TestIntegrationDuplicateDeliveriesFetchOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 40, 6)
	h.setup(cli.QueueSettings{Visibility: 5 * time.Second, MaxReceiveCount: 5})
	h.CheckDuplicatesFetchOnce(16)
}

// TestIntegrationCrashMidBatchLosesNothing kills the handlers in the middle of their batches
// (every write after the limit fails and the run is cancelled, with messages in flight in SQS),
// then resumes with fresh handlers: nothing is lost, and only pages in flight at the crash may
// be fetched again.
func TestIntegrationCrashMidBatchLosesNothing(t *testing.T) {
	t.Parallel()
	// Each limit kills the crawl at a different point: inside admission, in the middle of the
	// fetch batches, and while parse batches write records and send links. The points are
	// fractions of the writes of a whole crawl of the same site: at 72% of them, 23 to 26 of the 30
	// pages were fetched; at 94%, all of them.
	const concurrency = 8
	qs := cli.QueueSettings{Visibility: 2 * time.Second, MaxReceiveCount: 5}
	whole := newHarness(t, 30, 5)
	whole.setup(qs)
	for _, limit := range whole.CrashPoints(concurrency, 0.05, 0.35, 0.65) {
		t.Run("after_"+strconv.FormatInt(limit, 10)+"_writes", func(t *testing.T) {
			h := newHarness(t, 30, 5)
			h.setup(qs)
			h.Crash(limit, concurrency)
			atCrash := h.Site.Fetched()
			if atCrash == h.Site.Pages {
				t.Fatalf("the crash at write %d came after the whole site was fetched: it tests nothing", limit)
			}
			r := h.Resume(concurrency)
			t.Logf("crashed at write %d with %d of %d pages fetched; %d fetched again after the resume",
				limit, atCrash, h.Site.Pages, len(r))
		})
	}
}

// TestIntegrationCrashAtEveryNamedStepLosesNothing kills the crawl on the AWS adapters at each
// named step between two writes of the pipeline (the third time a worker reaches it), then
// resumes: nothing is lost, and at most the one page in flight is fetched again.
func TestIntegrationCrashAtEveryNamedStepLosesNothing(t *testing.T) {
	t.Parallel()
	for _, step := range e2etest.Steps() {
		t.Run(step.Name, func(t *testing.T) {
			t.Parallel()
			const concurrency = 1
			h := newHarness(t, 20, 4)
			h.setup(cli.QueueSettings{Visibility: 2 * time.Second, MaxReceiveCount: 5})
			h.CrashAt(step, 3, concurrency)
			h.Resume(concurrency)
		})
	}
}

// TestIntegrationTransientFaultsDuringARunThatFinishes: SQS, DynamoDB and S3 each fail every 17th
// call, every message comes twice, some pages answer 503 or answer slowly, and the host's rate
// makes messages wait: the crawl finishes by itself and loses nothing.
func TestIntegrationTransientFaultsDuringARunThatFinishes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 20, 4)
	h.setup(cli.QueueSettings{Visibility: 2 * time.Second, MaxReceiveCount: 10})
	// Every message twice and a fault in every 17th call: with three runs at once on the emulators,
	// 20 to 51 s (median 22 s of 12), as the 503s raise the host's gap and the retried records
	// come back late for their slots; so it gets the embedded run's bound rather than the usual
	// minute.
	h.Timeout = e2etest.DefaultTimeout
	h.CheckTransientFaults(17, 4, 16)
}

// TestIntegrationAFailingURLGivesUpAfterItsTries: a page that answers 503 to every request is
// requested as many times as the retry policy allows, then failed with its class, and no message
// reaches a DLQ, on the AWS adapters.
func TestIntegrationAFailingURLGivesUpAfterItsTries(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 20, 4)
	h.setup(cli.QueueSettings{Visibility: 2 * time.Second, MaxReceiveCount: 5})
	h.CheckFailingURLGivesUp(3, 4, 8)
}

// TestIntegrationARetryPolicyPerCrawl: on the AWS adapters, a spec's retry section sets the tries
// of its classes (timeout 3, http_5xx 2) and the stack's (CRAWL_RETRY_CLASSES) those it leaves
// (http_429 1): the fetch handler reads the crawl's policy from the bucket, as on Lambda.
func TestIntegrationARetryPolicyPerCrawl(t *testing.T) {
	h := newHarness(t, 20, 4)
	h.setup(cli.QueueSettings{Visibility: 5 * time.Second, MaxReceiveCount: 5})
	h.CheckRetryPolicyPerCrawl(8)
}

// TestIntegrationBadURLsGiveUpWithTheDefaults: on the AWS adapters, a crawl with a dead, a
// trickling, an always-500 and a bad Retry-After page finishes in under two minutes with the
// default retry policy, the two that time out requested twice and the others 4 times, nothing in a
// DLQ.
func TestIntegrationBadURLsGiveUpWithTheDefaults(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 20, 4)
	h.setup(cli.QueueSettings{Visibility: 2 * time.Minute, MaxReceiveCount: 5})
	h.Timeout = 4 * time.Minute
	h.CheckBadURLsGiveUpWithTheDefaults(8)
}

// TestIntegrationAKeptTypeIsArchived: on the AWS adapters, a spec's keep stores a linked PDF in
// the WARC files in S3, with a record of its type (e2etest CheckKeptTypeIsArchived).
func TestIntegrationAKeptTypeIsArchived(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 20, 4)
	h.Site.Files = true
	h.setup(cli.QueueSettings{Visibility: 5 * time.Second, MaxReceiveCount: 5})
	h.CheckKeptTypeIsArchived(8)
}

// TestIntegrationContentKindsBesideHTML: on the AWS adapters, a spec's parse records a PDF's text
// and metadata (and follows its link), a JSON API's json fields and items, and a text file's text;
// a PDF that panics the reader is its own parse error (e2etest CheckContentKinds).
func TestIntegrationContentKindsBesideHTML(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 1, 1)
	h.setup(cli.QueueSettings{Visibility: 5 * time.Second, MaxReceiveCount: 5})
	h.CheckContentKinds(e2etest.NewContentSite(t), 4)
}

// TestIntegrationPriorityUnderAPageBudget: on the AWS adapters, a spec's priority rules decide
// which of the home page's links its page budget goes to (e2etest CheckPriorityUnderABudget).
func TestIntegrationPriorityUnderAPageBudget(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 60, 10)
	h.setup(cli.QueueSettings{Visibility: 5 * time.Second, MaxReceiveCount: 5})
	h.CheckPriorityUnderABudget(8)
}

// TestIntegrationSpecWithExtractionRules crawls the site from a crawl spec on the AWS adapters:
// the spec's settings reach every handler through the bucket, and every record carries the
// extracted fields.
func TestIntegrationSpecWithExtractionRules(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 30, 5)
	h.setup(cli.QueueSettings{Visibility: 5 * time.Second, MaxReceiveCount: 5})
	h.CheckSpecExtracts(8)
}

// TestIntegrationHostRulesSetRateDepthAndHeadersPerHost crawls a fast and a slow host in one
// crawl on the AWS adapters, from a spec whose hosts section gives each its rate (booked in the
// table's politeness slots), depth and header (e2etest.CheckHostRules).
func TestIntegrationHostRulesSetRateDepthAndHeadersPerHost(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 30, 5)
	h.setup(cli.QueueSettings{Visibility: 5 * time.Second, MaxReceiveCount: 5})
	h.CheckHostRules(8)
}

// TestIntegrationSitemapsFindEveryPage crawls, on the AWS adapters, a site whose orphan pages only
// its sitemaps list (robots.txt's Sitemap: line, an index, a gzip sitemap, /sitemap.xml): a spec
// that asks for sitemaps fetches every one of them.
func TestIntegrationSitemapsFindEveryPage(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 20, 4)
	h.Site = e2etest.NewSiteWithOrphans(t, 20, 4, 30)
	h.setup(cli.QueueSettings{Visibility: 5 * time.Second, MaxReceiveCount: 5})
	h.CheckSitemapsFindEveryPage(8)
}

// TestIntegrationRecrawl recrawls the site on the AWS adapters through the scheduled tick of the
// stack's recrawl rule: the previous crawl's validators are read back from DynamoDB, a 304 or the
// same digest stores a revisit record in S3, and the records of unchanged pages reuse the first
// crawl's (shared/testkit/e2etest CheckRecrawl).
func TestIntegrationRecrawl(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 40, 5)
	h.Site.Validators = true
	h.setup(cli.QueueSettings{Visibility: 5 * time.Second, MaxReceiveCount: 5})
	h.CheckRecrawl(8, func(i int) bool { return i%5 == 4 }, func(i int) bool { return i%10 == 1 })
}

// TestIntegrationRecrawlSkipsBySitemapLastmod: on the AWS adapters, a recrawl asks nothing of the
// sitemap-listed pages whose lastmod is older than the first crawl, and records them unchanged.
func TestIntegrationRecrawlSkipsBySitemapLastmod(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 20, 4)
	h.Site = e2etest.NewSiteWithOrphans(t, 20, 4, 30)
	h.Site.Validators = true
	h.setup(cli.QueueSettings{Visibility: 5 * time.Second, MaxReceiveCount: 5})
	h.CheckRecrawlSkipsBySitemap(8)
}

// TestIntegrationRecordsAreStreamedAsTheyAreStored: on SQS, S3 and DynamoDB, every page's record
// reaches the record stream queue as stored, the first failed batch's twice (at least once).
func TestIntegrationRecordsAreStreamedAsTheyAreStored(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 40, 4)
	h.setup(cli.QueueSettings{Visibility: 5 * time.Second, MaxReceiveCount: 5})
	h.CheckRecordsAreStreamed(8)
}

// TestIntegrationALoginWallIsCrawledWithItsSessions crawls, on the AWS adapters, a site behind a
// login wall and a consent cookie whose sessions expire: the cookie jars and the login claims
// live in DynamoDB (e2etest.CheckLoginWall).
func TestIntegrationALoginWallIsCrawledWithItsSessions(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 10, 3)
	h.setup(cli.QueueSettings{Visibility: 5 * time.Second, MaxReceiveCount: 5})
	h.CheckLoginWall(4)
}
