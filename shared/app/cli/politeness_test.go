package cli

import (
	"testing"
	"time"
)

// newPoliteHarness is a harness whose queues have a short visibility and a maxReceiveCount of 2,
// which the handlers follow: a politeness wait that burned receives would put its message in a
// DLQ within the test.
func newPoliteHarness(t *testing.T, pages, links int) *harness {
	t.Helper()
	return newHarnessWith(t, pages, links, QueueSettings{Visibility: 2 * time.Second, MaxReceiveCount: 2})
}

// TestPolitenessIsSharedByAllWorkers seeds 16 pages of one host at 5 requests/s with 16 fetches
// in flight (two pollers): the messages reserve the host's slots together, up to 3 s ahead, so
// those more than a second ahead wait in the queue. They are re-sent with a delay, never failed,
// so nothing reaches a DLQ; every page is fetched once, and the requests keep the interval.
func TestPolitenessIsSharedByAllWorkers(t *testing.T) {
	const rps = 5
	const interval = time.Second / rps
	// No burst (no two requests within half the interval), and the whole crawl keeps the rate.
	newPoliteHarness(t, 16, 4).CheckPolitenessWaits(rps, 16, interval/2, interval/2)
}

// TestHeldSlotArrivingEarlyWaitsForIt delivers a fetch message 800 ms before the politeness slot
// it holds: the fetcher waits in place, and the page is requested no earlier than the slot.
func TestHeldSlotArrivingEarlyWaitsForIt(t *testing.T) {
	newPoliteHarness(t, 1, 1).CheckHeldSlotWaits()
}

// TestCrawlDelaySpacesRequests seeds 8 pages of one host whose robots.txt asks for a Crawl-delay
// of 0.25 s, with no rate of the crawler's own: the requests keep the delay.
func TestCrawlDelaySpacesRequests(t *testing.T) {
	const delay = 250 * time.Millisecond
	newPoliteHarness(t, 8, 3).CheckCrawlDelay(delay, 16, delay/2, delay/2)
}
