package cli

import (
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/testkit/e2etest"
)

// The invariant suites again with the site's URLs in runs (e2etest.Harness.Runs): fetch messages
// of several of the host's URLs, claimed in one write and fetched one after another in their
// slots, waiting in place (shared/crawl/frontier/runs.go, shared/handler/fetcher/runs.go).

func newRunsHarness(t *testing.T, pages, links int, qs QueueSettings) *harness {
	t.Helper()
	h := newHarnessWith(t, pages, links, qs)
	h.Runs = true
	return h
}

func TestRunsCrawlFetchesEveryPageOnce(t *testing.T) {
	t.Parallel()
	newRunsHarness(t, 60, 6, QueueSettings{Visibility: 30 * time.Second, MaxReceiveCount: 5}).CheckCrawlsOnce(16)
}

func TestRunsDuplicateDeliveriesFetchOnce(t *testing.T) {
	t.Parallel()
	newRunsHarness(t, 60, 6, QueueSettings{Visibility: 30 * time.Second, MaxReceiveCount: 5}).CheckDuplicatesFetchOnce(24)
}

// TestRunsCrashAtEveryNamedStepLosesNothing kills a crawl of runs at each named step, among them
// after a group's claim is written with its run's pages not all fetched (AfterGroupWrite), then
// resumes it: nothing is lost, and only the pages held at the crash may be fetched again.
func TestRunsCrashAtEveryNamedStepLosesNothing(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("crash points: several crawls")
	}
	for _, step := range e2etest.Steps() {
		t.Run(step.Name, func(t *testing.T) {
			t.Parallel()
			const concurrency = 1
			h := newRunsHarness(t, 40, 5, QueueSettings{Visibility: time.Second, MaxReceiveCount: 5})
			h.CrashAt(step, 3, concurrency)
			h.Resume(concurrency)
		})
	}
}

func TestRunsTransientFaultsDuringARunThatFinishes(t *testing.T) {
	t.Parallel()
	h := newRunsHarness(t, 40, 5, QueueSettings{Visibility: time.Second, MaxReceiveCount: 10})
	h.CheckTransientFaults(17, 8, 32)
}
