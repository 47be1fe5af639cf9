package dynamotable_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/crawlstack/crawlstack/shared/aws/dynamotable"
	"github.com/crawlstack/crawlstack/shared/port/table"
	"github.com/crawlstack/crawlstack/shared/port/table/tabletest"
	"github.com/crawlstack/crawlstack/shared/testkit/awstest"
)

// newTable creates a fresh table at the configured endpoint and returns it with its client.
func newTable(t *testing.T) (*dynamotable.Table, *dynamodb.Client, string) {
	t.Helper()
	return awstest.DynamoTable(t, "crawl")
}

// TestIntegrationConformance runs the table port's conformance suite against DynamoDB at the
// configured endpoint, on one table (the suite gives each subtest its own key prefix).
func TestIntegrationConformance(t *testing.T) {
	tb, _, _ := newTable(t)
	tabletest.Run(t, func(t *testing.T) table.Table { return tb })
}

func TestIntegrationCreateTable(t *testing.T) {
	tb, client, name := newTable(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := tb.CreateTable(ctx, name); err != nil {
		t.Fatalf("CreateTable of an existing table: %v", err)
	}
	desc, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatalf("DescribeTable: %v", err)
	}
	if got := desc.Table.TableStatus; got != types.TableStatusActive {
		t.Errorf("TableStatus = %s, want ACTIVE", got)
	}
	if bm := desc.Table.BillingModeSummary; bm == nil || bm.BillingMode != types.BillingModePayPerRequest {
		t.Errorf("BillingModeSummary = %+v, want PAY_PER_REQUEST", bm)
	}
	ttl, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatalf("DescribeTimeToLive: %v", err)
	}
	d := ttl.TimeToLiveDescription
	if d == nil || aws.ToString(d.AttributeName) != table.TTLAttr ||
		(d.TimeToLiveStatus != types.TimeToLiveStatusEnabled && d.TimeToLiveStatus != types.TimeToLiveStatusEnabling) {
		t.Errorf("TimeToLiveDescription = %+v, want %s enabled", d, table.TTLAttr)
	}
}

// TestIntegrationStoredShape checks what lands in DynamoDB: the key as pk and sk, reserved words as
// literal attribute names, and numbers as N.
func TestIntegrationStoredShape(t *testing.T) {
	tb, client, name := newTable(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	key := table.Key{Part: "p", Sort: "k"}
	if err := tb.Put(ctx, key, table.Item{"status": "queued", "a.b": "dot", "n": int64(7)}, table.ItemNotExists()); err != nil {
		t.Fatalf("Put: %v", err)
	}
	out, err := client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(name), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "p"}, "sk": &types.AttributeValueMemberS{Value: "k"}},
	})
	if err != nil {
		t.Fatalf("GetItem: %v", err)
	}
	if s, ok := out.Item["status"].(*types.AttributeValueMemberS); !ok || s.Value != "queued" {
		t.Errorf("status = %#v, want S queued", out.Item["status"])
	}
	if s, ok := out.Item["a.b"].(*types.AttributeValueMemberS); !ok || s.Value != "dot" {
		t.Errorf("a.b = %#v, want S dot (a literal name, not a path)", out.Item["a.b"])
	}
	if n, ok := out.Item["n"].(*types.AttributeValueMemberN); !ok || n.Value != "7" {
		t.Errorf("n = %#v, want N 7", out.Item["n"])
	}
	got, err := tb.Update(ctx, key, table.Update{Set: map[string]any{"a.b": "dot2"}}, table.Eq("a.b", "dot"))
	if err != nil {
		t.Fatalf("Update on a dotted name: %v", err)
	}
	if got.String("a.b") != "dot2" {
		t.Errorf("Update result a.b = %q, want dot2", got.String("a.b"))
	}
}

// TestIntegrationOverlappingUpdateIsRefused: DynamoDB itself refuses an update that names an
// attribute twice, the rule the adapter checks before it sends one (table.Update.Check).
func TestIntegrationOverlappingUpdateIsRefused(t *testing.T) {
	_, client, name := newTable(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(name),
		Key: map[string]types.AttributeValue{table.KeyAttr: &types.AttributeValueMemberS{Value: "overlap"},
			table.SortAttr: &types.AttributeValueMemberS{Value: "s"}},
		UpdateExpression:          aws.String("SET #n = :one ADD #n :one"),
		ExpressionAttributeNames:  map[string]string{"#n": "n"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
	})
	if err == nil || !strings.Contains(err.Error(), "overlap") {
		t.Fatalf("UpdateItem that sets and adds one attribute = %v, want DynamoDB's refusal (paths overlap)", err)
	}
}
