package crawlstate

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/crawlstack/crawlstack/shared/awstest"
	"github.com/crawlstack/crawlstack/shared/dynamotable"
)

// TestIntegrationCountersAndBudgetOnDynamoDB runs the counter and budget tests on DynamoDB at the
// configured endpoint, in one fresh table (each test uses a crawl of its own).
func TestIntegrationCountersAndBudgetOnDynamoDB(t *testing.T) {
	cfg := awstest.Config(t)
	awstest.RequireService(t, "DYNAMODB")
	client := dynamodb.NewFromConfig(cfg)
	name := awstest.UniqueName(t, "crawlstate")
	tb := dynamotable.New(client, name)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := tb.CreateTable(ctx, name); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)}); err != nil {
			t.Logf("delete table %s: %v", name, err)
		}
	})
	for _, tt := range tableTests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, tb) })
	}
}
