package stacke2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/demo/demosite"
	"github.com/crawlstack/crawlstack/shared/port/queue"
	"github.com/crawlstack/crawlstack/shared/testkit/e2etest"
	"github.com/crawlstack/crawlstack/shared/testkit/stackrun"
)

// TestIntegrationDeployedStackSlowLane: the stack's default runs of 10 URLs send a polite host's
// URLs to the slow lane. With the host held to a request a second (CRAWL_HOST_RPS=1 over the test
// template's 100/s, in every function), the seed file's crawl goes through the lane's queue and
// the real fetchslow bootstrap at the template's 128 MB, and fetch is never invoked: schedule sends
// the runs to the lane's queue and to no other. Every lane batch is delivered twice (SQS delivers
// at least once), and a malformed message waits in the lane's queue. Every page is served once
// and read back from its WARC file, every invariant holds, the malformed message is quarantined
// under quarantine/fetchslow/, and every call of the lane is allowed by its role, with no grant
// unused but those kept (iam_test.go).
func TestIntegrationDeployedStackSlowLane(t *testing.T) {
	template, dist, rie := paths(t)
	d := deployTemplate(t, template, dist, rie, map[string]string{"CRAWL_HOST_RPS": "1"})
	lane := d.stack.Functions[fetchSlow]
	if lane == nil {
		t.Fatalf("the template has no %s function: the stack's default runUrls must make the slow lane", fetchSlow)
	}
	if got := lane.Env["CRAWL_RUN_URLS"]; got != "10" {
		t.Fatalf("the lane's CRAWL_RUN_URLS is %q, want the stack's default 10", got)
	}
	site := e2etest.NewSite(t, 12, 4)
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()

	h, blobs := d.crawlHarness(t, site)
	if err := d.looker.SendBatch(ctx, lane.Mapping.QueueURL, []queue.Entry{{ID: "poison", Body: "{not a message of the crawler"}}); err != nil {
		t.Fatal(err)
	}
	d.uploadSeed(ctx, t, site)
	dup := &duplicates{}
	r := d.runner(func(name string, inv stackrun.Invoker) stackrun.Invoker {
		if name != fetchSlow {
			return inv
		}
		dup.inv = inv
		return dup
	})
	start := time.Now()
	if err := r.Run(ctx); err != nil {
		t.Fatalf("the crawl did not finish within %v: %v; pending:\n%s", runTimeout, err, h.Pending(""))
	}
	t.Logf("%v; invocations: schedule %d, fetch %d, fetchslow %d (%d of them a batch delivered again), parse %d",
		time.Since(start).Round(time.Second), d.pools["schedule"].Invocations(), d.pools["fetch"].Invocations(),
		d.pools[fetchSlow].Invocations(), dup.count(), d.pools["parse"].Invocations())

	crawls := seedReports(t, blobs)
	if len(crawls) != 1 {
		t.Fatalf("seed reports = %v: want the upload's crawl", crawls)
	}
	for i := range site.Pages { // before checkWARC, which asks the site for each page again
		if n := site.Hits(demosite.Path(i)); n != 1 {
			t.Errorf("page %d was served %d times, want once", i, n)
		}
	}
	h.CheckNothingLost(crawls[0])
	checkWARC(t, h, crawls[0])
	if n := d.pools["fetch"].Invocations(); n != 0 {
		t.Errorf("fetch was invoked %d times; want none: a polite host's URLs go in runs to the slow lane", n)
	}
	if n := dup.count(); n < 2 {
		t.Errorf("%s worked %d batches (each twice); want its malformed message's and the runs'", fetchSlow, n)
	}
	if keys, err := blobs.List(ctx, "quarantine/"+fetchSlow+"/"); err != nil || len(keys) != 1 {
		t.Errorf("quarantine/%s/ holds %v (%v), want the one malformed message", fetchSlow, keys, err)
	}
	// schedule's sends, from its recorded calls: to the lane's queue, never to fetch's.
	sends := map[string]int{}
	for _, c := range d.calls("schedule") {
		if strings.HasPrefix(c.Action, "sqs:SendMessage") {
			sends[c.Resource]++
		}
	}
	if sends[lane.Mapping.QueueARN] == 0 || sends[d.stack.Functions["fetch"].Mapping.QueueARN] != 0 {
		t.Errorf("schedule's sends by queue %v: want some to the lane's %s and none to fetch's", sends, lane.Mapping.QueueARN)
	}
	t.Run("IAM", func(t *testing.T) {
		checkIAM(t, d, fetchSlow)
		checkAllowed(t, "schedule", d.stack.Functions["schedule"], d.calls("schedule")) // its sends to the lane among them
	})
	t.Run("KeyOwnership", func(t *testing.T) { checkKeyOwnership(t, d, fetchSlow) })
}
