package awse2e

import (
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/app/cli"
	"github.com/crawlstack/crawlstack/shared/testkit/e2etest"
)

// TestIntegrationOptOutBackendAWS: `crawl optout --backend aws` keeps the list in DynamoDB, and
// `crawl run --backend aws` never requests a URL on it (shared/app/cli runs the same check on the
// embedded backend).
func TestIntegrationOptOutBackendAWS(t *testing.T) {
	h := newHarness(t, 1, 1)
	h.setup(cli.QueueSettings{Visibility: 5 * time.Second, MaxReceiveCount: 5}) // the table the list lives in
	h.setenv()
	e2etest.CheckOptOut(t, crawlMain, []string{"--backend", "aws", "--host-rps", "0", "--visibility", "5s", "--concurrency", "4"},
		[]string{"--backend", "aws"})
}
