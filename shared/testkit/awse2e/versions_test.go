package awse2e

import (
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/app/cli"
)

// TestIntegrationACrawlAcrossAVersionBump: on the AWS adapters, handlers writing schema versions
// 1 and 2 into the same queues crawl the site, losing nothing and fetching nothing twice; a
// message of a newer and of a too old version are quarantined with their reasons.
func TestIntegrationACrawlAcrossAVersionBump(t *testing.T) {
	h := newHarness(t, 60, 6)
	h.setup(cli.QueueSettings{Visibility: 30 * time.Second, MaxReceiveCount: 5})
	h.CheckVersionBump(8)
}
