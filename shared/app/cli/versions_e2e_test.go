package cli

import (
	"testing"
	"time"
)

// TestACrawlAcrossAVersionBump: handlers writing schema versions 1 and 2 into the same queues
// crawl the site on the embedded backend, losing nothing and fetching nothing twice
// (shared/testkit/awse2e runs it on the AWS adapters).
func TestACrawlAcrossAVersionBump(t *testing.T) {
	newHarness(t, 60, 6, 30*time.Second).CheckVersionBump(8)
}
