package faultproxy_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/crawlstack/crawlstack/shared/testkit/awstest"
	"github.com/crawlstack/crawlstack/shared/testkit/faultproxy"
)

// TestIntegrationApplyThenLoseTheAnswerReplaysAConditionalPut: a PutItem with
// attribute_not_exists(pk) is applied, then its answer is lost (a 500, or a reset connection); the
// SDK replays it, and the replay fails its own condition. The emulator, read directly, holds the
// item.
func TestIntegrationApplyThenLoseTheAnswerReplaysAConditionalPut(t *testing.T) {
	for _, kind := range []faultproxy.Kind{faultproxy.Apply500, faultproxy.ApplyDrop} {
		t.Run(string(kind), func(t *testing.T) {
			r := newRig(t, faultproxy.Schedule{Seed: 1, Script: map[uint64]faultproxy.Kind{1: kind}}, 0, 0)
			_, _, table := awstest.DynamoTable(t, "fp")
			ctx := ctxT(t)
			_, err := r.via.ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table),
				Item: map[string]types.AttributeValue{
					"pk": &types.AttributeValueMemberS{Value: "url#1"}, "sk": sk, "n": &types.AttributeValueMemberN{Value: "7"}},
				ConditionExpression: aws.String("attribute_not_exists(pk)")})
			var ccf *types.ConditionalCheckFailedException
			if !errors.As(err, &ccf) {
				t.Fatalf("PutItem through %s: err = %v, want the replay's ConditionalCheckFailedException", kind, err)
			}
			got, err := r.direct.ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table),
				Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "url#1"}, "sk": sk}, ConsistentRead: aws.Bool(true)})
			if err != nil {
				t.Fatal(err)
			}
			if n, ok := got.Item["n"].(*types.AttributeValueMemberN); !ok || n.Value != "7" {
				t.Errorf("the emulator holds %v, want the item written by the first attempt", got.Item)
			}
			fs := r.p.Faults()
			if len(fs) != 1 || fs[0].Kind != kind || fs[0].Op != "PutItem" || fs[0].Seq != 1 ||
				!strings.Contains(fs[0].Target, table) || !strings.Contains(fs[0].Target, "url#1") {
				t.Errorf("fault log = %v, want one %s on PutItem of %s url#1 at seq 1", fs, kind, table)
			}
		})
	}
}

// TestIntegrationApplyThenDropCountsAnAddTwice: an UpdateItem ADD whose answer is lost is
// replayed by the SDK and applied twice: the call succeeds once, the counter reads 2.
func TestIntegrationApplyThenDropCountsAnAddTwice(t *testing.T) {
	r := newRig(t, faultproxy.Schedule{Seed: 1, Script: map[uint64]faultproxy.Kind{1: faultproxy.ApplyDrop}}, 0, 0)
	_, _, table := awstest.DynamoTable(t, "fp")
	ctx := ctxT(t)
	key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "counter"}, "sk": sk}
	if _, err := r.via.ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: key,
		UpdateExpression:          aws.String("ADD n :one"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}}}); err != nil {
		t.Fatalf("UpdateItem: %v (the SDK should have replayed the dropped answer)", err)
	}
	got, err := r.direct.ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := got.Item["n"].(*types.AttributeValueMemberN); !ok || n.Value != "2" {
		t.Errorf("counter = %v after one ADD whose answer was dropped, want 2 (applied, then replayed)", got.Item["n"])
	}
	if c := r.p.Counts(); c[faultproxy.ApplyDrop] != 1 || len(r.p.Faults()) != 1 {
		t.Errorf("counts = %v, want one apply-drop", c)
	}
}

// TestIntegrationDynamoThrottle: a throttled PutItem is not applied; the SDK decodes the
// answer as DynamoDB's throttling error, which its retryer counts as a throttle, and with retries
// the call succeeds.
func TestIntegrationDynamoThrottle(t *testing.T) {
	_, _, table := awstest.DynamoTable(t, "fp")
	put := func(r *rig, pk string) error {
		_, err := r.via.ddb.PutItem(ctxT(t), &dynamodb.PutItemInput{TableName: aws.String(table),
			Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": sk}})
		return err
	}
	exists := func(r *rig, pk string) bool {
		got, err := r.direct.ddb.GetItem(ctxT(t), &dynamodb.GetItemInput{TableName: aws.String(table),
			Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": sk}, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		return got.Item != nil
	}
	// Requests 1 and 2 get the two codes the proxy alternates between.
	once := newRig(t, faultproxy.Schedule{Seed: 1, Script: map[uint64]faultproxy.Kind{1: faultproxy.Throttle, 2: faultproxy.Throttle}}, 1, 0)
	for i, want := range []string{"ThrottlingException", "ProvisionedThroughputExceededException"} {
		pk := "throttled-" + want
		err := put(once, pk)
		if codeOf(err) != want || statusOf(err) != 400 {
			t.Errorf("request %d: err = %v (code %q, status %d), want %s 400", i+1, err, codeOf(err), statusOf(err), want)
		}
		if !retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err).Bool() {
			t.Errorf("the SDK does not count %v as a throttle", err)
		}
		if exists(once, pk) {
			t.Errorf("a throttled PutItem was applied")
		}
	}
	retried := newRig(t, faultproxy.Schedule{Seed: 1, Script: map[uint64]faultproxy.Kind{1: faultproxy.Throttle}}, 0, 0)
	if err := put(retried, "retried"); err != nil || !exists(retried, "retried") {
		t.Errorf("PutItem after one throttle: err = %v, want the SDK's retry to write it", err)
	}
}

// sk is the sort key of the items these tests write: the table has one (docs/state.md).
var sk = &types.AttributeValueMemberS{Value: "s"}
