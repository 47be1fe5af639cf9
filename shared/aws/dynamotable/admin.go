package dynamotable

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// CreateTableWait bounds how long CreateTable waits for a new table to become ACTIVE.
const CreateTableWait = 2 * time.Minute

// CreateTable creates the named table if it does not exist (partition key pk and sort key sk,
// both of type S, on-demand billing), waits until it is ACTIVE with the SDK's waiter, and turns on TTL for expiresAt.
// TTL deletes items late, by up to days, so the crawler never relies on it for correctness.
func (t *Table) CreateTable(ctx context.Context, name string) error {
	_, err := t.api.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(table.KeyAttr), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(table.SortAttr), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(table.KeyAttr), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(table.SortAttr), KeyType: types.KeyTypeRange},
		},
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("create table %s: %w", name, err)
	}
	waiter := dynamodb.NewTableExistsWaiter(t.api, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = 500 * time.Millisecond
		o.MaxDelay = 5 * time.Second
	})
	if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, CreateTableWait); err != nil {
		return fmt.Errorf("create table %s: wait until active: %w", name, err)
	}
	ttl, err := t.api.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err != nil {
		return fmt.Errorf("create table %s: describe ttl: %w", name, err)
	}
	if d := ttl.TimeToLiveDescription; d != nil &&
		(d.TimeToLiveStatus == types.TimeToLiveStatusEnabled || d.TimeToLiveStatus == types.TimeToLiveStatusEnabling) {
		return nil
	}
	_, err = t.api.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(table.TTLAttr), Enabled: aws.Bool(true),
		},
	})
	if err != nil {
		return fmt.Errorf("create table %s: enable ttl on %s: %w", name, table.TTLAttr, err)
	}
	return nil
}
