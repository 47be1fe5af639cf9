package meter_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/cost"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/crawlstack/crawlstack/shared/observe/meter"
	"github.com/crawlstack/crawlstack/shared/testkit/awstest"
)

// TestIntegrationMeterDynamoDB meters a put, a failed conditional put and an eventually
// consistent get against DynamoDB at the configured endpoint. By DynamoDB's rules for items under
// 1 KB: the put is 1 write unit (from ConsumedCapacity), the failed put 1 write unit (counted by
// the meter, since the error answer carries no ConsumedCapacity), and the get 0.5 read units.
// Creating and deleting the table are control-plane calls and count nothing.
func TestIntegrationMeterDynamoDB(t *testing.T) {
	cfg := awstest.Config(t)
	awstest.RequireService(t, "DYNAMODB")
	m := meter.New()
	m.Register(&cfg)
	client := dynamodb.NewFromConfig(cfg)
	name := awstest.UniqueName(t, "meter")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	if _, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
	}); err != nil {
		t.Fatalf("create table %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)}); err != nil {
			t.Logf("delete table %s: %v", name, err)
		}
	})
	if err := dynamodb.NewTableExistsWaiter(client).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, time.Minute); err != nil {
		t.Fatalf("wait for table %s: %v", name, err)
	}
	if got := m.Snapshot(); got != (cost.Units{}) {
		t.Errorf("after the control-plane calls: Snapshot = %+v, want nothing", got)
	}

	item := map[string]types.AttributeValue{
		"pk":    &types.AttributeValueMemberS{Value: "url#1"},
		"state": &types.AttributeValueMemberS{Value: "admitted"},
	}
	put := &dynamodb.PutItemInput{TableName: aws.String(name), Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)")}
	before := m.Snapshot()
	if _, err := client.PutItem(ctx, put); err != nil {
		t.Fatalf("PutItem: %v", err)
	}
	if got, want := m.Snapshot().Sub(before), (cost.Units{DynamoDBWriteUnits: 1}); got != want {
		t.Errorf("put: units = %+v, want %+v", got, want)
	}

	before = m.Snapshot()
	_, err := client.PutItem(ctx, put)
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		t.Fatalf("second PutItem error = %v, want ConditionalCheckFailedException", err)
	}
	if got, want := m.Snapshot().Sub(before), (cost.Units{DynamoDBWriteUnits: 1}); got != want {
		t.Errorf("failed conditional put: units = %+v, want %+v", got, want)
	}

	before = m.Snapshot()
	out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(name),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "url#1"}}})
	if err != nil {
		t.Fatalf("GetItem: %v", err)
	}
	if out.Item == nil {
		t.Fatal("GetItem found no item")
	}
	if got, want := m.Snapshot().Sub(before), (cost.Units{DynamoDBReadUnits: 0.5}); got != want {
		t.Errorf("eventually consistent get: units = %+v, want %+v", got, want)
	}
	if got, want := m.Snapshot(), (cost.Units{DynamoDBWriteUnits: 2, DynamoDBReadUnits: 0.5}); got != want {
		t.Errorf("total: Snapshot = %+v, want %+v", got, want)
	}
}
