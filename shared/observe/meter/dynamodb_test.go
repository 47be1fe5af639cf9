package meter_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/cost"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/crawlstack/crawlstack/shared/observe/meter"
)

const ddb = "DynamoDB_20120810."

// ccfAnswer is DynamoDB's answer to a failed condition, with the old item's JSON when not empty.
func ccfAnswer(itemJSON string) answer {
	body := `{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":"The conditional request failed"`
	if itemJSON != "" {
		body += `,"Item":` + itemJSON
	}
	return answer{status: 400, body: body + "}"}
}

// s is a string attribute value.
func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func TestDynamoDBConsumedCapacity(t *testing.T) {
	f := newFakeAWS(t, map[string][]answer{
		ddb + "PutItem": {{status: 200, body: `{"ConsumedCapacity":{"TableName":"t","CapacityUnits":1.0}}`}},
		ddb + "GetItem": {{status: 200, body: `{"Item":{"pk":{"S":"a"}},"ConsumedCapacity":{"TableName":"t","CapacityUnits":0.5}}`}},
		// An answer that splits its units is taken as split.
		ddb + "UpdateItem":         {{status: 200, body: `{"ConsumedCapacity":{"TableName":"t","CapacityUnits":3.0,"ReadCapacityUnits":1.0,"WriteCapacityUnits":2.0}}`}},
		ddb + "BatchGetItem":       {{status: 200, body: `{"Responses":{},"ConsumedCapacity":[{"TableName":"a","CapacityUnits":1.5},{"TableName":"b","CapacityUnits":0.5}]}`}},
		ddb + "TransactWriteItems": {{status: 200, body: `{"ConsumedCapacity":[{"TableName":"t","CapacityUnits":4.0}]}`}},
		ddb + "DescribeTable":      {{status: 200, body: `{"Table":{"TableName":"t","TableStatus":"ACTIVE"}}`}},
	})
	cfg, m := f.config()
	c := dynamodb.NewFromConfig(cfg)
	ctx := testContext(t)

	put := &dynamodb.PutItemInput{TableName: aws.String("t"), Item: map[string]types.AttributeValue{"pk": s("a")}}
	if _, err := c.PutItem(ctx, put); err != nil {
		t.Fatalf("PutItem: %v", err)
	}
	if put.ReturnConsumedCapacity != "" {
		t.Errorf("the caller's PutItemInput was changed: ReturnConsumedCapacity = %q", put.ReturnConsumedCapacity)
	}
	if got := f.got(ddb + "PutItem"); len(got) != 1 || !strings.Contains(got[0], `"ReturnConsumedCapacity":"TOTAL"`) {
		t.Errorf("PutItem request = %q, want ReturnConsumedCapacity TOTAL", got)
	}
	if _, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: map[string]types.AttributeValue{"pk": s("a")}}); err != nil {
		t.Fatalf("GetItem: %v", err)
	}
	// A caller's own INDEXES is kept.
	if _, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: map[string]types.AttributeValue{"pk": s("a")},
		UpdateExpression: aws.String("SET x = :x"), ExpressionAttributeValues: map[string]types.AttributeValue{":x": s("1")},
		ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes}); err != nil {
		t.Fatalf("UpdateItem: %v", err)
	}
	if got := f.got(ddb + "UpdateItem"); len(got) != 1 || !strings.Contains(got[0], `"ReturnConsumedCapacity":"INDEXES"`) {
		t.Errorf("UpdateItem request = %q, want the caller's INDEXES", got)
	}
	if _, err := c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
		"a": {Keys: []map[string]types.AttributeValue{{"pk": s("a")}}},
	}}); err != nil {
		t.Fatalf("BatchGetItem: %v", err)
	}
	if _, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String("t"), Item: map[string]types.AttributeValue{"pk": s("a")}}},
		{Put: &types.Put{TableName: aws.String("t"), Item: map[string]types.AttributeValue{"pk": s("b")}}},
	}}); err != nil {
		t.Fatalf("TransactWriteItems: %v", err)
	}
	if _, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("t")}); err != nil {
		t.Fatalf("DescribeTable: %v", err)
	}
	// Writes: put 1 + update 2 + transaction 4 = 7; reads: get 0.5 + update 1 + batch 1.5 + 0.5 = 3.5.
	// DescribeTable is not billed per request.
	want := cost.Units{DynamoDBWriteUnits: 7, DynamoDBReadUnits: 3.5}
	if got := m.Snapshot(); got != want {
		t.Errorf("Snapshot = %+v, want %+v", got, want)
	}
}

func TestDynamoDBFailedConditionalWrites(t *testing.T) {
	big := strings.Repeat("x", 1500)   // PutItem item: pk(2)+"k1"(2) + body(4)+1500 = 1508 bytes -> 2 units
	old := strings.Repeat("y", 3000)   // old item: pk(2)+"k1"(2) + blob(4)+3000 = 3008 bytes -> 3 units
	small := strings.Repeat("z", 2000) // old item: pk(2)+"k1"(2) + blob(4)+2000 = 2008 bytes -> 2 units
	tests := []struct {
		name string
		ans  answer
		call func(*dynamodb.Client) error
		want cost.Units
	}{
		{"put without old item: the item sent", ccfAnswer(""), func(c *dynamodb.Client) error {
			_, err := c.PutItem(testContext(t), &dynamodb.PutItemInput{TableName: aws.String("t"),
				Item:                map[string]types.AttributeValue{"pk": s("k1"), "body": s(big)},
				ConditionExpression: aws.String("attribute_not_exists(pk)")})
			return err
		}, cost.Units{DynamoDBWriteUnits: 2}},
		{"put with a larger old item: the old item", ccfAnswer(`{"pk":{"S":"k1"},"blob":{"S":"` + old + `"}}`), func(c *dynamodb.Client) error {
			_, err := c.PutItem(testContext(t), &dynamodb.PutItemInput{TableName: aws.String("t"),
				Item:                                map[string]types.AttributeValue{"pk": s("k1"), "body": s(big)},
				ConditionExpression:                 aws.String("attribute_not_exists(pk)"),
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
			return err
		}, cost.Units{DynamoDBWriteUnits: 3}},
		{"update with old item", ccfAnswer(`{"pk":{"S":"k1"},"blob":{"S":"` + small + `"}}`), func(c *dynamodb.Client) error {
			_, err := c.UpdateItem(testContext(t), &dynamodb.UpdateItemInput{TableName: aws.String("t"),
				Key: map[string]types.AttributeValue{"pk": s("k1")}, UpdateExpression: aws.String("SET n = :n"),
				ExpressionAttributeValues:           map[string]types.AttributeValue{":n": s("1")},
				ConditionExpression:                 aws.String("attribute_not_exists(n)"),
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
			return err
		}, cost.Units{DynamoDBWriteUnits: 2}},
		{"update without old item: one unit", ccfAnswer(""), func(c *dynamodb.Client) error {
			_, err := c.UpdateItem(testContext(t), &dynamodb.UpdateItemInput{TableName: aws.String("t"),
				Key: map[string]types.AttributeValue{"pk": s("k1")}, UpdateExpression: aws.String("SET n = :n"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":n": s("1")},
				ConditionExpression:       aws.String("attribute_not_exists(n)")})
			return err
		}, cost.Units{DynamoDBWriteUnits: 1}},
		{"delete without old item: one unit", ccfAnswer(""), func(c *dynamodb.Client) error {
			_, err := c.DeleteItem(testContext(t), &dynamodb.DeleteItemInput{TableName: aws.String("t"),
				Key: map[string]types.AttributeValue{"pk": s("k1")}, ConditionExpression: aws.String("attribute_exists(x)")})
			return err
		}, cost.Units{DynamoDBWriteUnits: 1}},
		// Two items at the transactional rate: the put's 1508-byte item 2 x 2, the update 2 x 1.
		{"transaction cancelled by a condition", answer{status: 400, body: `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException",` +
			`"Message":"Transaction cancelled","CancellationReasons":[{"Code":"ConditionalCheckFailed","Message":"The conditional request failed"},{"Code":"None"}]}`},
			func(c *dynamodb.Client) error {
				_, err := c.TransactWriteItems(testContext(t), &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
					{Put: &types.Put{TableName: aws.String("t"), Item: map[string]types.AttributeValue{"pk": s("k1"), "body": s(big)},
						ConditionExpression: aws.String("attribute_not_exists(pk)")}},
					{Update: &types.Update{TableName: aws.String("t"), Key: map[string]types.AttributeValue{"pk": s("k2")},
						UpdateExpression: aws.String("SET n = :n"), ExpressionAttributeValues: map[string]types.AttributeValue{":n": s("1")}}},
				}})
				return err
			}, cost.Units{DynamoDBWriteUnits: 6}},
		{"transaction cancelled by a conflict: nothing", answer{status: 400, body: `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException",` +
			`"Message":"Transaction cancelled","CancellationReasons":[{"Code":"TransactionConflict"}]}`},
			func(c *dynamodb.Client) error {
				_, err := c.TransactWriteItems(testContext(t), &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
					{Put: &types.Put{TableName: aws.String("t"), Item: map[string]types.AttributeValue{"pk": s("k1")}}},
				}})
				return err
			}, cost.Units{}},
		{"validation error: nothing", answer{status: 400, body: `{"__type":"com.amazon.coral.validate#ValidationException","message":"bad"}`},
			func(c *dynamodb.Client) error {
				_, err := c.PutItem(testContext(t), &dynamodb.PutItemInput{TableName: aws.String("t"), Item: map[string]types.AttributeValue{"pk": s("k1")}})
				return err
			}, cost.Units{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAWS(t, map[string][]answer{
				ddb + "PutItem": {tt.ans}, ddb + "UpdateItem": {tt.ans}, ddb + "DeleteItem": {tt.ans}, ddb + "TransactWriteItems": {tt.ans},
			})
			cfg, m := f.config()
			err := tt.call(dynamodb.NewFromConfig(cfg))
			var ccf *types.ConditionalCheckFailedException
			var tce *types.TransactionCanceledException
			var apiErr interface{ ErrorCode() string }
			if !errors.As(err, &ccf) && !errors.As(err, &tce) && !errors.As(err, &apiErr) {
				t.Fatalf("call error = %v, want the canned error", err)
			}
			if got := m.Snapshot(); got != tt.want {
				t.Errorf("Snapshot = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestDynamoDBThrottledThenSucceeded(t *testing.T) {
	throttle := answer{status: 400, body: `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"slow down"}`}
	f := newFakeAWS(t, map[string][]answer{
		ddb + "PutItem": {throttle, throttle, {status: 200, body: `{"ConsumedCapacity":{"TableName":"t","CapacityUnits":1.0}}`}},
	})
	cfg, m := f.config()
	if _, err := dynamodb.NewFromConfig(cfg).PutItem(testContext(t), &dynamodb.PutItemInput{TableName: aws.String("t"),
		Item: map[string]types.AttributeValue{"pk": s("a")}}); err != nil {
		t.Fatalf("PutItem: %v", err)
	}
	if n := len(f.got(ddb + "PutItem")); n != 3 {
		t.Fatalf("server got %d PutItem attempts, want 3 (two throttled)", n)
	}
	// Throttled attempts are not billed: only the successful one's unit counts.
	if got, want := m.Snapshot(), (cost.Units{DynamoDBWriteUnits: 1}); got != want {
		t.Errorf("Snapshot = %+v, want %+v", got, want)
	}
}

func TestDynamoDBUnmetered(t *testing.T) {
	f := newFakeAWS(t, map[string][]answer{ddb + "DeleteItem": {{status: 200, body: `{}`}}})
	cfg, m := f.config()
	if _, err := dynamodb.NewFromConfig(cfg).DeleteItem(testContext(t), &dynamodb.DeleteItemInput{TableName: aws.String("t"),
		Key: map[string]types.AttributeValue{"pk": s("a")}, ReturnConsumedCapacity: types.ReturnConsumedCapacityNone}); err != nil {
		t.Fatalf("DeleteItem: %v", err)
	}
	if got := f.got(ddb + "DeleteItem"); len(got) != 1 || !strings.Contains(got[0], `"ReturnConsumedCapacity":"NONE"`) {
		t.Errorf("DeleteItem request = %q, want the caller's NONE kept", got)
	}
	if got, want := m.Snapshot(), (cost.Units{DynamoDBUnmetered: 1}); got != want {
		t.Errorf("Snapshot = %+v, want %+v", got, want)
	}
}

// Calls made with an account in their context count in it too, and only those.
func TestAccountCountsItsOwnCalls(t *testing.T) {
	f := newFakeAWS(t, map[string][]answer{
		ddb + "PutItem": {
			{status: 200, body: `{"ConsumedCapacity":{"TableName":"t","CapacityUnits":1.0}}`},
			{status: 200, body: `{"ConsumedCapacity":{"TableName":"t","CapacityUnits":2.0}}`},
		},
	})
	cfg, m := f.config()
	c := dynamodb.NewFromConfig(cfg)
	put := &dynamodb.PutItemInput{TableName: aws.String("t"), Item: map[string]types.AttributeValue{"pk": s("a")}}
	acct := meter.New()
	if _, err := c.PutItem(meter.WithAccount(testContext(t), acct), put); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutItem(testContext(t), put); err != nil {
		t.Fatal(err)
	}
	if got := acct.Snapshot().DynamoDBWriteUnits; got != 1 {
		t.Errorf("the account counted %v write units, want the 1 of its own call", got)
	}
	if got := m.Snapshot().DynamoDBWriteUnits; got != 3 {
		t.Errorf("the meter counted %v write units, want 3", got)
	}
}

// Accounts nest: a call counts in its invocation's account and in the account around the run, and
// once in an account nested twice.
func TestNestedAccountsEachCountTheCall(t *testing.T) {
	f := newFakeAWS(t, map[string][]answer{
		ddb + "PutItem": {
			{status: 200, body: `{"ConsumedCapacity":{"TableName":"t","CapacityUnits":1.0}}`},
			{status: 200, body: `{"ConsumedCapacity":{"TableName":"t","CapacityUnits":2.0}}`},
		},
	})
	cfg, m := f.config()
	c := dynamodb.NewFromConfig(cfg)
	put := &dynamodb.PutItemInput{TableName: aws.String("t"), Item: map[string]types.AttributeValue{"pk": s("a")}}
	run, invocation := meter.New(), meter.New()
	outer := meter.WithAccount(testContext(t), run)
	if _, err := c.PutItem(meter.WithAccount(meter.WithAccount(outer, invocation), run), put); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutItem(outer, put); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		m    *meter.Meter
		want float64
	}{{"the run's account", run, 3}, {"the invocation's account", invocation, 1}, {"the meter", m, 3}} {
		if got := tc.m.Snapshot().DynamoDBWriteUnits; got != tc.want {
			t.Errorf("%s counted %v write units, want %v", tc.name, got, tc.want)
		}
	}
}
