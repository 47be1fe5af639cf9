package awse2e

import (
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/app/cli"
)

// TestIntegrationEndAnnouncedOnce runs a crawl's drain checks on SQS and DynamoDB, with every
// message delivered twice, every parse message (the last one too) failing once before it is marked
// done, and the first put of the end event failing after the end was decided: the end is announced
// exactly once, with the crawl's exact counts, after its last page.
func TestIntegrationEndAnnouncedOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 20, 4)
	h.setup(cli.QueueSettings{Visibility: 3 * time.Second, MaxReceiveCount: 5})
	h.CheckEndAnnouncedOnce(8)
}

// TestIntegrationEndPutAgainAfterCrashBeforeMark: on SQS and DynamoDB, a crash after the event is
// put and before the end is marked announced puts the same event again, with the same id.
func TestIntegrationEndPutAgainAfterCrashBeforeMark(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 10, 3)
	h.setup(cli.QueueSettings{Visibility: 3 * time.Second, MaxReceiveCount: 5})
	h.CheckEndPutAgainAfterCrashBeforeMark(8)
}

// TestIntegrationEndWaitsForLinksFailingTwice: on SQS and DynamoDB, with checks that tally as soon
// as the counters stop moving, every Links message with a new URL of the pages' failing twice before
// its URLs are admitted: the end waits for each, and is announced once, after the last page.
func TestIntegrationEndWaitsForLinksFailingTwice(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 20, 4)
	h.setup(cli.QueueSettings{Visibility: 3 * time.Second, MaxReceiveCount: 5})
	h.CheckEndWaitsForLinksFailingTwice(1, 8)
}
