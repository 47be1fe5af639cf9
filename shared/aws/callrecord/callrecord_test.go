package callrecord_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/crawlstack/crawlstack/shared/aws/callrecord"
)

func TestDescribe(t *testing.T) {
	const region, account = "us-east-1", "111122223333"
	tests := []struct {
		name, service, op string
		in                any
		want              []callrecord.Call
	}{
		{"GetObject", "S3", "GetObject", &s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String("pages/x.warc.gz")},
			[]callrecord.Call{{Operation: "GetObject", Action: "s3:GetObject", Resource: "arn:aws:s3:::b/pages/x.warc.gz"}}},
		{"HeadObjectIsGetObject", "S3", "HeadObject", &s3.HeadObjectInput{Bucket: aws.String("b"), Key: aws.String("k")},
			[]callrecord.Call{{Operation: "HeadObject", Action: "s3:GetObject", Resource: "arn:aws:s3:::b/k"}}},
		{"ListObjectsV2IsListBucketWithPrefix", "S3", "ListObjectsV2", &s3.ListObjectsV2Input{Bucket: aws.String("b"), Prefix: aws.String("seeds/")},
			[]callrecord.Call{{Operation: "ListObjectsV2", Action: "s3:ListBucket", Resource: "arn:aws:s3:::b", Context: map[string]string{"s3:prefix": "seeds/"}}}},
		{"SendMessageBatch", "SQS", "SendMessageBatch", &sqs.SendMessageBatchInput{QueueUrl: aws.String("http://127.0.0.1:9/000000000000/fetch")},
			[]callrecord.Call{{Operation: "SendMessageBatch", Action: "sqs:SendMessage", Resource: "arn:aws:sqs:us-east-1:000000000000:fetch"}}},
		{"UpdateItem", "DynamoDB", "UpdateItem", &dynamodb.UpdateItemInput{TableName: aws.String("t")},
			[]callrecord.Call{{Operation: "UpdateItem", Action: "dynamodb:UpdateItem", Resource: "arn:aws:dynamodb:us-east-1:111122223333:table/t"}}},
		{"TransactionPerItem", "DynamoDB", "TransactWriteItems", &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{TableName: aws.String("t")}}, {ConditionCheck: &types.ConditionCheck{TableName: aws.String("u")}}}},
			[]callrecord.Call{
				{Operation: "TransactWriteItems", Action: "dynamodb:PutItem", Resource: "arn:aws:dynamodb:us-east-1:111122223333:table/t"},
				{Operation: "TransactWriteItems", Action: "dynamodb:ConditionCheckItem", Resource: "arn:aws:dynamodb:us-east-1:111122223333:table/u"}}},
		{"PutEventsOnTheDefaultBus", "EventBridge", "PutEvents", &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{
			{EventBusName: aws.String("default")}, {}}},
			[]callrecord.Call{{Operation: "PutEvents", Action: "events:PutEvents", Resource: "arn:aws:events:us-east-1:111122223333:event-bus/default"}}},
		{"PutEventsPerBus", "EventBridge", "PutEvents", &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{
			{EventBusName: aws.String("default")}, {EventBusName: aws.String("arn:aws:events:us-east-1:111122223333:event-bus/other")}}},
			[]callrecord.Call{
				{Operation: "PutEvents", Action: "events:PutEvents", Resource: "arn:aws:events:us-east-1:111122223333:event-bus/default"},
				{Operation: "PutEvents", Action: "events:PutEvents", Resource: "arn:aws:events:us-east-1:111122223333:event-bus/other"}}},
		{"UnknownResourceIsEverything", "SQS", "ListQueues", &sqs.ListQueuesInput{},
			[]callrecord.Call{{Operation: "ListQueues", Action: "sqs:ListQueues", Resource: "*"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := callrecord.Describe(tt.service, tt.op, region, account, tt.in)
			if len(got) != len(tt.want) {
				t.Fatalf("Describe = %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i].Action != tt.want[i].Action || got[i].Resource != tt.want[i].Resource ||
					got[i].Operation != tt.want[i].Operation || len(got[i].Context) != len(tt.want[i].Context) ||
					got[i].Context["s3:prefix"] != tt.want[i].Context["s3:prefix"] {
					t.Errorf("call %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// TestRecorderWritesEveryOperationOnce registers the recorder on a configuration and makes calls
// through an SDK client against a server that fails the first attempt: each operation is written
// once, with the caller's name, however often it is retried.
func TestRecorderWritesEveryOperationOnce(t *testing.T) {
	attempts := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if attempts++; attempts == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	var log bytes.Buffer
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("k", "s", ""),
		BaseEndpoint: aws.String(srv.URL)}
	callrecord.New(&log, "fetch", "000000000000").Register(&cfg)
	c := dynamodb.NewFromConfig(cfg)
	if _, err := c.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String("t"),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "x"}}}); err != nil {
		t.Fatal(err)
	}
	calls, err := callrecord.Read(&log)
	if err != nil {
		t.Fatal(err)
	}
	want := callrecord.Call{Who: "fetch", Operation: "GetItem", Action: "dynamodb:GetItem", Resource: "arn:aws:dynamodb:us-east-1:000000000000:table/t"}
	if attempts != 2 || len(calls) != 1 || calls[0].Who != want.Who || calls[0].Action != want.Action || calls[0].Resource != want.Resource {
		t.Errorf("%d attempts recorded as %+v, want 2 attempts recorded once as %+v", attempts, calls, want)
	}
}

// TestLeadingKeys: a DynamoDB call carries the partition keys of the items it names, as IAM's
// dynamodb:LeadingKeys has them: by key, by item, in a batch, and a Query's key condition as the
// SDK's expression builder writes it.
func TestLeadingKeys(t *testing.T) {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	key := func(pk string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": s(pk), "sk": s("u#1")}
	}
	cond := expression.Key("pk").Equal(expression.Value("c#crawl#7")).And(expression.Key("sk").BeginsWith("u#"))
	ex, err := expression.NewBuilder().WithKeyCondition(cond).Build()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		in   any
		want []string
	}{
		{"PutItem", &dynamodb.PutItemInput{TableName: aws.String("t"), Item: key("x#optout")}, []string{"x#optout"}},
		{"UpdateItem", &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: key("p#3")}, []string{"p#3"}},
		{"DeleteItem", &dynamodb.DeleteItemInput{TableName: aws.String("t"), Key: key("k#1")}, []string{"k#1"}},
		{"GetItem", &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key("c#a#0")}, []string{"c#a#0"}},
		{"BatchGetItem", &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
			"t": {Keys: []map[string]types.AttributeValue{key("c#a#0"), key("c#a#1"), key("c#a#0")}}}}, []string{"c#a#0", "c#a#1"}},
		{"Query", &dynamodb.QueryInput{TableName: aws.String("t"), KeyConditionExpression: ex.KeyCondition(),
			ExpressionAttributeNames: ex.Names(), ExpressionAttributeValues: ex.Values()}, []string{"c#crawl#7"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := callrecord.Describe("DynamoDB", tt.name, "us-east-1", "1", tt.in)
			if len(calls) != 1 || !slices.Equal(calls[0].LeadingKeys, tt.want) {
				t.Errorf("calls %+v, want one with leading keys %q", calls, tt.want)
			}
		})
	}
}
