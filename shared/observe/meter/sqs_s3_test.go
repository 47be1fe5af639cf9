package meter_test

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"strings"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/cost"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

const queueURL = "http://127.0.0.1/000000000000/q"

// entries returns n batch entries with bodies of size bytes each.
func entries(n, size int) []sqstypes.SendMessageBatchRequestEntry {
	es := make([]sqstypes.SendMessageBatchRequestEntry, n)
	for i := range es {
		es[i] = sqstypes.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), MessageBody: aws.String(strings.Repeat("b", size))}
	}
	return es
}

// received returns a ReceiveMessage answer with n messages of size bytes each.
func received(n, size int) string {
	msgs := make([]string, n)
	for i := range msgs {
		msgs[i] = fmt.Sprintf(`{"MessageId":"m%d","ReceiptHandle":"r%d","Body":%q}`, i, i, strings.Repeat("m", size))
	}
	return `{"Messages":[` + strings.Join(msgs, ",") + `]}`
}

func TestSQSRequests(t *testing.T) {
	ok := answer{status: 200, body: `{"Successful":[],"Failed":[]}`}
	f := newFakeAWS(t, map[string][]answer{
		"AmazonSQS.SendMessageBatch":   {ok},
		"AmazonSQS.ReceiveMessage":     {{status: 200, body: received(3, 30000)}, {status: 200, body: `{}`}},
		"AmazonSQS.DeleteMessageBatch": {{status: 200, body: `{"Successful":[],"Failed":[]}`}},
		"AmazonSQS.SendMessage": {{status: 400, body: `{"__type":"com.amazonaws.sqs#QueueDoesNotExist","message":"no queue"}`,
			header: map[string]string{"x-amzn-query-error": "AWS.SimpleQueueService.NonExistentQueue;Sender"}}},
	})
	cfg, m := f.config()
	m.Register(&cfg) // registered twice: must still count each request once
	c := sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.DisableMessageChecksumValidation = true })
	ctx := testContext(t)

	// 4 x 16384 = 65536 bytes: exactly one chunk.
	if _, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: entries(4, 16384)}); err != nil {
		t.Fatalf("SendMessageBatch: %v", err)
	}
	// The same plus one attribute: name "a" 1 + type "String" 6 + value "x" 1 = 65544 bytes: two.
	es := entries(4, 16384)
	es[2].MessageAttributes = map[string]sqstypes.MessageAttributeValue{"a": {DataType: aws.String("String"), StringValue: aws.String("x")}}
	if _, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: es}); err != nil {
		t.Fatalf("SendMessageBatch: %v", err)
	}
	// 10 x 20000 = 200000 bytes: four chunks (3 x 65536 = 196608 < 200000).
	if _, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: entries(10, 20000)}); err != nil {
		t.Fatalf("SendMessageBatch: %v", err)
	}
	// 3 x 30000 = 90000 bytes received: two; then an empty receive: one.
	for range 2 {
		if _, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10}); err != nil {
			t.Fatalf("ReceiveMessage: %v", err)
		}
	}
	if _, err := c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(queueURL),
		Entries: []sqstypes.DeleteMessageBatchRequestEntry{{Id: aws.String("0"), ReceiptHandle: aws.String("r0")}}}); err != nil {
		t.Fatalf("DeleteMessageBatch: %v", err)
	}
	// An error answer is still a request: one.
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String("x")}); err == nil {
		t.Fatal("SendMessage to a missing queue succeeded, want the canned error")
	}
	want := cost.Units{SQSRequests: 1 + 2 + 4 + 2 + 1 + 1 + 1}
	if got := m.Snapshot(); got != want {
		t.Errorf("Snapshot = %+v, want %+v", got, want)
	}
	wantCalls := map[string]int64{"SendMessageBatch q": 7, "ReceiveMessage q": 3, "DeleteMessageBatch q": 1, "SendMessage q": 1}
	if got := m.SQSCalls(); !maps.Equal(got, wantCalls) {
		t.Errorf("SQSCalls = %v, want %v", got, wantCalls)
	}
}

func TestS3Requests(t *testing.T) {
	f := newFakeAWS(t, map[string][]answer{
		"PUT /b/pages/1":    {{status: 200, header: map[string]string{"ETag": `"e"`}}},
		"GET /b/pages/1":    {{status: 503, body: "<Error><Code>SlowDown</Code><Message>slow</Message></Error>"}, {status: 200, body: "page"}},
		"HEAD /b/pages/2":   {{status: 404}},
		"GET /b":            {{status: 200, body: `<ListBucketResult><Name>b</Name><KeyCount>0</KeyCount><IsTruncated>false</IsTruncated></ListBucketResult>`}},
		"DELETE /b/pages/1": {{status: 204}},
	})
	cfg, m := f.config()
	c := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
	ctx := testContext(t)

	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("b"), Key: aws.String("pages/1"), Body: bytes.NewReader([]byte("page"))}); err != nil {
		t.Fatalf("PutObject: %v", err)
	}
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String("pages/1")})
	if err != nil {
		t.Fatalf("GetObject: %v", err)
	}
	body, _ := io.ReadAll(out.Body)
	_ = out.Body.Close()
	if string(body) != "page" {
		t.Errorf("GetObject body = %q, want page", body)
	}
	if n := len(f.got("GET /b/pages/1")); n != 2 {
		t.Errorf("server got %d GETs, want 2 (one 503, retried)", n)
	}
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("b"), Key: aws.String("pages/2")}); err == nil {
		t.Error("HeadObject of a missing key succeeded, want 404")
	}
	if _, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("b")}); err != nil {
		t.Fatalf("ListObjectsV2: %v", err)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("b"), Key: aws.String("pages/1")}); err != nil {
		t.Fatalf("DeleteObject: %v", err)
	}
	// Class A: the PUT and the LIST. Class B: the GET that succeeded and the HEAD's 404; the 503
	// is not billed, nor is the DELETE.
	want := cost.Units{S3ClassA: 2, S3ClassB: 2}
	if got := m.Snapshot(); got != want {
		t.Errorf("Snapshot = %+v, want %+v", got, want)
	}
}
