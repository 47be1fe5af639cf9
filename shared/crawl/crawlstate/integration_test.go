package crawlstate

import (
	"testing"

	"github.com/crawlstack/crawlstack/shared/testkit/awstest"
)

// TestIntegrationCountersAndBudgetOnDynamoDB runs the counter and budget tests on DynamoDB at the
// configured endpoint, in one fresh table (each test uses a crawl of its own).
func TestIntegrationCountersAndBudgetOnDynamoDB(t *testing.T) {
	tb, _, _ := awstest.DynamoTable(t, "crawlstate")
	for _, tt := range tableTests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, tb) })
	}
}

// TestIntegrationTallyInStepsOnDynamoDB runs the tests of the resumable tally on DynamoDB at the
// configured endpoint, in one fresh table.
func TestIntegrationTallyInStepsOnDynamoDB(t *testing.T) {
	tb, _, _ := awstest.DynamoTable(t, "tallystep")
	for _, tt := range tallyStepTests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, tb) })
	}
}
