package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// fakeSQS keeps what is sent, by queue URL.
type fakeSQS struct {
	mu   sync.Mutex
	sent map[string][]string
}

func (f *fakeSQS) GetQueueUrl(_ context.Context, in *sqs.GetQueueUrlInput, _ ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	return &sqs.GetQueueUrlOutput{QueueUrl: aws.String("http://sqs/" + aws.ToString(in.QueueOwnerAWSAccountId) + "/" + aws.ToString(in.QueueName))}, nil
}

func (f *fakeSQS) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent[aws.ToString(in.QueueUrl)] = append(f.sent[aws.ToString(in.QueueUrl)], aws.ToString(in.MessageBody))
	return &sqs.SendMessageOutput{}, nil
}

// TestNotifications configures a bucket as CDK's handler does and creates objects through the
// SDK: S3's test event when the configuration is put, an ObjectCreated:Put event for an object
// under the prefix, sent before PutObject returns, and nothing for one elsewhere.
func TestNotifications(t *testing.T) {
	backend := s3mem.New()
	q := &fakeSQS{sent: map[string][]string{}}
	srv := httptest.NewServer(newNotifier(backend, q, "us-east-1", gofakes3.New(backend).Server()))
	defer srv.Close()
	c := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	ctx := context.Background()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bkt")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutBucketNotificationConfiguration(ctx, &s3.PutBucketNotificationConfigurationInput{Bucket: aws.String("bkt"),
		NotificationConfiguration: &s3types.NotificationConfiguration{QueueConfigurations: []s3types.QueueConfiguration{{
			QueueArn: aws.String("arn:aws:sqs:us-east-1:000000000000:schedule"), Events: []s3types.Event{"s3:ObjectCreated:*"},
			Filter: &s3types.NotificationConfigurationFilter{Key: &s3types.S3KeyFilter{FilterRules: []s3types.FilterRule{
				{Name: "prefix", Value: aws.String("seeds/")}}}}}}}}); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"seeds/my list.txt", "pages/x.warc.gz"} {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String(key), Body: bytes.NewReader([]byte("hello"))}); err != nil {
			t.Fatal(err)
		}
	}
	msgs := q.sent["http://sqs/000000000000/schedule"]
	if len(q.sent) != 1 || len(msgs) != 2 {
		t.Fatalf("sent %v, want the test event and one notification to the schedule queue", q.sent)
	}
	var test events.S3TestEvent
	if err := json.Unmarshal([]byte(msgs[0]), &test); err != nil || test.Event != "s3:TestEvent" || test.Bucket != "bkt" {
		t.Errorf("first message %s: want S3's test event for bucket bkt (%v)", msgs[0], err)
	}
	var ev events.S3Event
	if err := json.Unmarshal([]byte(msgs[1]), &ev); err != nil || len(ev.Records) != 1 {
		t.Fatalf("second message %s: want one S3 event record (%v)", msgs[1], err)
	}
	r := ev.Records[0]
	if r.EventName != "ObjectCreated:Put" || r.EventSource != "aws:s3" || r.S3.Bucket.Name != "bkt" ||
		r.S3.Object.Key != "seeds/my+list.txt" || r.S3.Object.Size != 5 || r.S3.Object.Sequencer == "" ||
		!strings.EqualFold(r.S3.Object.ETag, "5d41402abc4b2a76b9719d911017c592") { // md5("hello")
		t.Errorf("record = %+v", r)
	}
}
