package awse2e

import (
	"testing"

	"github.com/crawlstack/crawlstack/shared/testkit/e2etest"
)

// TestIntegrationThrottledHostsShownBackendAWS: a host that answered 429 is listed, with its gap,
// in the summary of `crawl run --backend aws` and in `crawl status --backend aws`, from the
// crawl's counter shards in DynamoDB (shared/app/cli runs the same check on the embedded backend).
func TestIntegrationThrottledHostsShownBackendAWS(t *testing.T) {
	h := newHarness(t, 1, 1)
	h.setenv()
	defer h.attach() // so that the queues the run creates are deleted when the test ends
	e2etest.CheckThrottledHostsShown(t, crawlMain,
		[]string{"--backend", "aws", "--host-rps", "0", "--visibility", "5s", "--concurrency", "4"}, []string{"--backend", "aws"})
}

// TestIntegrationCircuitOpensAndClosesBackendAWS: a host that fails for a few seconds opens its
// circuit on its slot item in DynamoDB, its URLs wait in SQS without requests until a probe
// answers, and the summary and status of --backend aws show it (shared/app/cli runs the same check on
// the embedded backend).
func TestIntegrationCircuitOpensAndClosesBackendAWS(t *testing.T) {
	h := newHarness(t, 1, 1)
	h.setenv()
	defer h.attach()
	e2etest.CheckCircuitOpensAndCloses(t, crawlMain, 4,
		[]string{"--backend", "aws", "--host-rps", "0", "--visibility", "5s"}, []string{"--backend", "aws"})
}
