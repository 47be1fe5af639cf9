package awse2e

import (
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/app/cli"
)

// politeQueues are short-lived queues with a maxReceiveCount of 2: a politeness wait that burned
// receives would put its message in a DLQ within the test.
var politeQueues = cli.QueueSettings{Visibility: 5 * time.Second, MaxReceiveCount: 2}

// TestIntegrationPolitenessWaitsNeverReachTheDLQ crawls with a per-host rate that most fetch
// messages must wait for, and a maxReceiveCount of 2: the waits re-send the messages with a delay
// instead of failing them, so every page is fetched, no dead-letter queue receives anything, and
// the requests keep the host's interval. Every page is a seed, so their fetch messages arrive
// together and a batch holds more of them than one second of the host's rate: the later ones
// must wait longer than a fetch waits in place.
func TestIntegrationPolitenessWaitsNeverReachTheDLQ(t *testing.T) {
	const rps = 4
	h := newHarness(t, 16, 4)
	h.setup(politeQueues)
	// The slots are taken at least interval apart; each request then arrives after its own
	// travel time, which a loaded machine stretches by tens of milliseconds. So: no burst (no
	// two requests within a fifth of the interval), and the whole crawl keeps the rate (n
	// requests span at least n-2 intervals).
	const interval = time.Second / rps
	h.CheckPolitenessWaits(rps, 8, interval/5, interval)
}

// TestIntegrationHeldSlotArrivingEarlyWaitsForIt puts on SQS a fetch message 800 ms before the
// politeness slot it holds in DynamoDB: the fetcher waits in place, the page is requested no
// earlier than the slot, and no other slot is taken.
func TestIntegrationHeldSlotArrivingEarlyWaitsForIt(t *testing.T) {
	h := newHarness(t, 1, 1)
	h.setup(politeQueues)
	h.CheckHeldSlotWaits()
}

// TestIntegrationCrawlDelaySpacesRequests crawls a site whose robots.txt asks for a Crawl-delay
// of 0.25 s, with no rate of the crawler's own and every page a seed: the requests keep the delay.
func TestIntegrationCrawlDelaySpacesRequests(t *testing.T) {
	const delay = 250 * time.Millisecond
	h := newHarness(t, 8, 3)
	h.setup(politeQueues)
	h.CheckCrawlDelay(delay, 8, delay/5, delay)
}
