package cli

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/port/queue"
	"github.com/crawlstack/crawlstack/shared/testkit/e2etest"
)

// harness is a loopback demo site and an embedded backend in a temp dir.
type harness struct {
	*e2etest.Harness
	be *Backend
}

func newHarness(t *testing.T, pages, links int, visibility time.Duration) *harness {
	t.Helper()
	return newHarnessWith(t, pages, links, QueueSettings{Visibility: visibility, MaxReceiveCount: 5})
}

// newHarnessWith is newHarness with the queues' settings qs, which the handlers follow too.
func newHarnessWith(t *testing.T, pages, links int, qs QueueSettings) *harness {
	t.Helper()
	site := e2etest.NewSite(t, pages, links)
	be, err := OpenEmbedded(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	res, err := be.Setup(context.Background(), qs)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{be: be, Harness: &e2etest.Harness{T: t, Site: site, MaxReceive: qs.MaxReceiveCount,
		Backend: e2etest.NewBackend(be, be.Queue, be.Table, be.Blobs, res, StartCrawl, NewRunner)}}
}

func TestCrawlFetchesEveryPageOnce(t *testing.T) {
	t.Parallel()
	newHarness(t, 150, 8, 30*time.Second).CheckCrawlsOnce(16)
}

func TestDuplicateDeliveriesFetchOnce(t *testing.T) {
	t.Parallel()
	newHarness(t, 120, 6, 30*time.Second).CheckDuplicatesFetchOnce(24)
}

func TestCrashBetweenAnyStepsLosesNothing(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("crash matrix: several crawls")
	}
	// Each limit kills the crawl at a different write: inside admission, between a claim and its
	// fetch, between a WARC write and its parse message, between a handler's success and the delete.
	// The limits are fractions of the writes of a whole crawl of the same site, so that the last
	// one is still a crash however few writes the pipeline comes to make. A crawl's writes vary
	// from run to run by more than a tenth (a fetch message's outcomes are one write, and how many
	// URLs a message and a batch hold depends on timing: 365 writes measured, a crawl that ended
	// short of 310), so the last point is at 70%.
	const concurrency = 8
	limits := newHarness(t, 60, 5, time.Second).CrashPoints(concurrency, 0.01, 0.05, 0.17, 0.35, 0.52, 0.7)
	for _, limit := range limits {
		t.Run("after_"+strconv.FormatInt(limit, 10)+"_writes", func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, 60, 5, time.Second)
			h.Crash(limit, concurrency)
			h.Resume(concurrency)
		})
	}
}

// TestCrashAtEveryNamedStepLosesNothing kills the crawl at each named step between two writes of
// the pipeline (the third time a worker reaches it, so that the crash is mid-crawl), then resumes
// it: nothing is lost, and at most the one page whose GET was in flight is fetched again.
func TestCrashAtEveryNamedStepLosesNothing(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("crash points: several crawls")
	}
	for _, step := range e2etest.Steps() {
		t.Run(step.Name, func(t *testing.T) {
			t.Parallel()
			const concurrency = 1
			h := newHarness(t, 40, 5, time.Second)
			h.CrashAt(step, 3, concurrency)
			h.Resume(concurrency)
		})
	}
}

// TestTransientFaultsDuringARunThatFinishes crawls while the queue, the table and the blob store
// each fail every 17th call, every message comes twice, some pages answer 503 or answer slowly,
// and the host's rate makes messages wait: the crawl finishes by itself and loses nothing. A
// record fails at most a few times in a row here, so maxReceiveCount 10 keeps the dead-letter
// queues for what they are for.
func TestTransientFaultsDuringARunThatFinishes(t *testing.T) {
	t.Parallel()
	h := newHarnessWith(t, 40, 5, QueueSettings{Visibility: time.Second, MaxReceiveCount: 10})
	h.CheckTransientFaults(17, 8, 32)
}

func TestPoisonIsQuarantinedAndTheCrawlGoesOn(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 30, 4, 30*time.Second)
	ctx := context.Background()
	for _, q := range []string{h.Res.Schedule, h.Res.Fetch, h.Res.Parse} {
		err := h.be.Queue.SendBatch(ctx, q, []queue.Entry{{ID: "a", Body: "{not json"},
			{ID: "b", Body: `{"v":99,"kind":"fetch","crawl":"x"}`}})
		if err != nil {
			t.Fatal(err)
		}
	}
	crawl, err := h.Crawl(ctx, h.Config(), h.Ports(), h.Queue, 8)
	if err != nil {
		t.Fatal(err)
	}
	h.CheckNothingLost(crawl)
	keys, err := h.be.Blobs.List(ctx, "quarantine/")
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 6 {
		t.Errorf("quarantined %d messages, want 6: %v", len(keys), keys)
	}
	for _, src := range []string{"schedule", "fetch", "parse"} {
		if !strings.Contains(strings.Join(keys, " "), "quarantine/"+src+"/") {
			t.Errorf("nothing quarantined for %s: %v", src, keys)
		}
	}
}

// TestAFailingURLGivesUpAfterItsTries: a page that answers 503 to every request is requested as
// many times as the retry policy allows, then failed with its class, and no message reaches a DLQ.
func TestAFailingURLGivesUpAfterItsTries(t *testing.T) {
	t.Parallel()
	newHarness(t, 20, 4, time.Second).CheckFailingURLGivesUp(3, 4, 8)
}

// TestPauseThenResumeLosesNothing and TestStopLosesNothing run the run-state scenarios on the
// embedded backend (shared/testkit/awse2e runs them on the AWS adapters). The queues' maxReceiveCount is
// 2: a pause that burned receive counts would send messages to the dead-letter queue.
// TestBadURLsGiveUpWithTheDefaults: a crawl with a dead, a trickling, an always-500 and a bad
// Retry-After page finishes in under two minutes with the default retry policy (about 40 s: the
// pages that time out are requested twice, the others 4 times).
func TestBadURLsGiveUpWithTheDefaults(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 20, 4, 2*time.Minute)
	h.Timeout = 4 * time.Minute
	h.CheckBadURLsGiveUpWithTheDefaults(8)
}

func TestPauseThenResumeLosesNothing(t *testing.T) {
	t.Parallel()
	newHarnessWith(t, 120, 6, QueueSettings{Visibility: 30 * time.Second, MaxReceiveCount: 2}).CheckPauseResume(8)
}

func TestStopLosesNothing(t *testing.T) {
	t.Parallel()
	newHarness(t, 120, 6, 30*time.Second).CheckStop(8)
}

// TestAKeptTypeIsArchived: a spec's keep stores a linked PDF in the WARC, with a record of its type
// (shared/testkit/e2etest CheckKeptTypeIsArchived).
func TestAKeptTypeIsArchived(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 20, 4, 30*time.Second)
	h.Site.Files = true
	h.CheckKeptTypeIsArchived(8)
}

// TestContentKindsBesideHTML: a spec's parse records a PDF's text and metadata (and follows its
// link), a JSON API's json fields and items, and a text file's text; a PDF that panics the reader
// is its own parse error (shared/testkit/e2etest CheckContentKinds).
func TestContentKindsBesideHTML(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 1, 1, 30*time.Second)
	h.CheckContentKinds(e2etest.NewContentSite(t), 4)
}

// TestPriorityUnderAPageBudget: a spec's priority rules decide which of the home page's links its
// page budget goes to (shared/testkit/e2etest CheckPriorityUnderABudget).
func TestPriorityUnderAPageBudget(t *testing.T) {
	t.Parallel()
	newHarness(t, 60, 10, 30*time.Second).CheckPriorityUnderABudget(8)
}

// A spec with extraction rules crawls the demo site: every record carries the extracted fields.
func TestSpecWithExtractionRules(t *testing.T) {
	t.Parallel()
	newHarness(t, 40, 5, 30*time.Second).CheckSpecExtracts(8)
}

// A site whose pages are reachable only through its sitemaps is crawled completely.
func TestSitemapsFindEveryPage(t *testing.T) {
	t.Parallel()
	site := e2etest.NewSiteWithOrphans(t, 20, 4, 45)
	h := newHarness(t, 20, 4, 30*time.Second)
	h.Site = site
	h.CheckSitemapsFindEveryPage(8)
}

// TestEndAnnouncedOnce: a crawl's end is announced exactly once, with every message delivered
// twice, every parse message (the last one too) failing once before it is marked done, and the
// first put of the event failing after the end was decided.
func TestEndAnnouncedOnce(t *testing.T) {
	t.Parallel()
	newHarness(t, 40, 5, time.Second).CheckEndAnnouncedOnce(8)
}

// TestEndWaitsForLinksFailingTwice: with checks that tally as soon as the counters stop moving,
// and every Links message with a new URL failing twice before its URLs are admitted (the seeds'
// too, or the pages' alone, the last page's too), the end is announced once, after every URL was
// admitted and every page fetched and recorded. At a 1 s visibility a heartbeat of the local
// runner that lands late under load lets a held message be received again, which counts towards
// maxReceiveCount as a failure would; 10 keeps the two injected failures and such receives off
// the dead-letter queue, which this test does not test.
func TestEndWaitsForLinksFailingTwice(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		minDepth int
	}{{"seeds and pages", 0}, {"pages", 1}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarnessWith(t, 40, 5, QueueSettings{Visibility: time.Second, MaxReceiveCount: 10})
			h.CheckEndWaitsForLinksFailingTwice(tt.minDepth, 8)
		})
	}
}

// TestEndPutAgainAfterCrashBeforeMark: a crash after the event is put and before the end is marked
// announced puts the same event again (EventBridge has no deduplication): same id, same detail.
func TestEndPutAgainAfterCrashBeforeMark(t *testing.T) {
	t.Parallel()
	newHarness(t, 20, 4, time.Second).CheckEndPutAgainAfterCrashBeforeMark(8)
}

// TestRecrawlAsksWithValidatorsAndStoresRevisits: a scheduled recrawl of the demo site, a tenth of
// whose pages changed, gets 304s or the same digests for the rest, stores revisit records that
// warcio.js resolves, and reuses the first crawl's records (shared/testkit/e2etest CheckRecrawl).
func TestRecrawlAsksWithValidatorsAndStoresRevisits(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 60, 5, 30*time.Second)
	h.Site.Validators = true
	h.CheckRecrawl(8, func(i int) bool { return i%5 == 4 }, func(i int) bool { return i%10 == 1 })
}

// TestRecrawlSkipsPagesBySitemapLastmod: a recrawl of a spec that reads sitemaps asks nothing of the
// pages whose lastmod is older than the first crawl, and records them unchanged.
func TestRecrawlSkipsPagesBySitemapLastmod(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 20, 4, 30*time.Second)
	h.Site = e2etest.NewSiteWithOrphans(t, 20, 4, 30)
	h.Site.Validators = true
	h.CheckRecrawlSkipsBySitemap(8)
}

// TestARetryPolicyPerCrawl: a spec's retry section sets the tries of its classes, and the stack's
// those it leaves, on the embedded backend (shared/testkit/awse2e runs it on the AWS adapters).
func TestARetryPolicyPerCrawl(t *testing.T) {
	newHarness(t, 20, 4, time.Second).CheckRetryPolicyPerCrawl(8)
}

func TestAGrowingSeedFileExtendsItsRunningCrawl(t *testing.T) {
	t.Parallel()
	newHarnessWith(t, 60, 5, QueueSettings{Visibility: 30 * time.Second, MaxReceiveCount: 2}).CheckAGrowingSeedFileExtendsItsCrawl(8)
}

func TestRecordsAreStreamedAsTheyAreStored(t *testing.T) {
	t.Parallel()
	newHarness(t, 60, 5, 30*time.Second).CheckRecordsAreStreamed(8)
}

// TestHostRulesSetRateDepthAndHeadersPerHost crawls a fast and a slow host in one crawl from a
// spec whose hosts section gives each its rate, depth and header (e2etest.CheckHostRules).
func TestHostRulesSetRateDepthAndHeadersPerHost(t *testing.T) {
	t.Parallel()
	newHarness(t, 40, 5, 30*time.Second).CheckHostRules(8)
}

// TestALoginWallIsCrawledWithItsSessions crawls a site behind a login wall and a consent cookie
// whose sessions expire, and again with a wrong password (e2etest.CheckLoginWall).
func TestALoginWallIsCrawledWithItsSessions(t *testing.T) {
	t.Parallel()
	newHarness(t, 10, 3, 30*time.Second).CheckLoginWall(4)
}
