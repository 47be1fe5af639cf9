package awse2e

import (
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/app/cli"
	"github.com/crawlstack/crawlstack/shared/testkit/e2etest"
)

// The invariant suites on the AWS adapters with the site's URLs in runs (e2etest.Harness.Runs):
// fetch messages of several of the host's URLs, claimed in one write on DynamoDB and fetched one
// after another in their slots.

func newRunsHarness(t *testing.T, pages, links int, qs cli.QueueSettings) *harness {
	t.Helper()
	h := newHarness(t, pages, links)
	h.Runs = true
	h.setup(qs)
	return h
}

func TestIntegrationRunsCrawlFetchesEveryPageOnce(t *testing.T) {
	t.Parallel()
	newRunsHarness(t, 40, 6, cli.QueueSettings{Visibility: 5 * time.Second, MaxReceiveCount: 5}).CheckCrawlsOnce(16)
}

func TestIntegrationRunsDuplicateDeliveriesFetchOnce(t *testing.T) {
	t.Parallel()
	newRunsHarness(t, 40, 6, cli.QueueSettings{Visibility: 5 * time.Second, MaxReceiveCount: 5}).CheckDuplicatesFetchOnce(16)
}

// TestIntegrationRunsCrashAtEveryNamedStepLosesNothing kills a crawl of runs on the AWS adapters
// at each named step, among them after a group's claim is written with its run not all fetched
// (AfterGroupWrite), then resumes: nothing is lost, and only the pages held at the crash may be
// fetched again.
func TestIntegrationRunsCrashAtEveryNamedStepLosesNothing(t *testing.T) {
	t.Parallel()
	for _, step := range e2etest.Steps() {
		t.Run(step.Name, func(t *testing.T) {
			t.Parallel()
			const concurrency = 1
			h := newRunsHarness(t, 20, 4, cli.QueueSettings{Visibility: 2 * time.Second, MaxReceiveCount: 5})
			h.CrashAt(step, 3, concurrency)
			h.Resume(concurrency)
		})
	}
}

func TestIntegrationRunsTransientFaultsDuringARunThatFinishes(t *testing.T) {
	t.Parallel()
	h := newRunsHarness(t, 20, 4, cli.QueueSettings{Visibility: 2 * time.Second, MaxReceiveCount: 10})
	h.Timeout = e2etest.DefaultTimeout
	h.CheckTransientFaults(17, 4, 16)
}
