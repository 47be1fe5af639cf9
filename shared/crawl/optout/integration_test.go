package optout

import (
	"testing"

	"github.com/crawlstack/crawlstack/shared/testkit/awstest"
)

// TestIntegrationStoreOnDynamoDB runs the list's test on DynamoDB at the configured endpoint.
func TestIntegrationStoreOnDynamoDB(t *testing.T) {
	tb, _, _ := awstest.DynamoTable(t, "optout")
	testStore(t, tb)
}
