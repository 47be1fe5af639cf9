package stacke2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/crawlstack/crawlstack/shared/crawl/records"
	"github.com/crawlstack/crawlstack/shared/handler/parser"
	"github.com/crawlstack/crawlstack/shared/testkit/awstest"
)

// optionsTemplate is the template synthesized with the stack's options on (the Makefile's
// LAMBDA_TRACING_CONTEXT: a collector layer, and a record stream queue).
func optionsTemplate(t *testing.T) string {
	t.Helper()
	template := os.Getenv(envTracingTemplate)
	if template == "" {
		msg := envTracingTemplate + " must name the template synthesized with the stack's options on: run `make test-emulators`, which builds it"
		if os.Getenv(awstest.EnvRequireEmulators) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return template
}

// TestIntegrationTheRecordStreamOnTheStack deploys the template synthesized with a record stream
// (recordStreamQueueArn), crawls a small site with the real bootstraps, and reads the stream
// queue: every page's record arrives as the records files in the bucket hold it (read back
// apart, through S3), sent by parse alone, and every send is allowed by parse's role in the
// template.
func TestIntegrationTheRecordStreamOnTheStack(t *testing.T) {
	_, dist, rie := paths(t)
	_, otlp := newOTLPReceiver(t) // the template's collector, played on loopback
	d := deployTemplate(t, optionsTemplate(t), dist, rie, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": otlp})
	stream := d.imported[envRecordStream]
	if stream == "" {
		t.Fatalf("the template gives no function %s: synthesize it with -c recordStreamQueueArn", envRecordStream)
	}
	site := crawlSite(t, d)
	stored := storedRecords(t, d)
	if len(stored) != site.Pages {
		t.Fatalf("%d records stored, want the site's %d pages", len(stored), site.Pages)
	}

	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	streamed := map[string]bool{}
	for len(streamed) < len(stored) {
		out, err := d.clients.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(stream),
			MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 60})
		if err != nil {
			t.Fatalf("receive from the stream (%d of %d records so far): %v", len(streamed), len(stored), err)
		}
		if len(out.Messages) == 0 {
			break // parse sent each record before it stored its file: nothing more is coming
		}
		for _, m := range out.Messages {
			var s parser.StreamMessage
			if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &s); err != nil || s.Record == nil {
				t.Fatalf("stream message %q: %v", aws.ToString(m.Body), err)
			}
			if want, ok := stored[s.Record.URL]; !ok || !reflect.DeepEqual(*s.Record, want) {
				t.Errorf("streamed %+v; want the record as stored: %+v", *s.Record, want)
			}
			streamed[s.Record.URL] = true
		}
	}
	if len(streamed) != len(stored) {
		t.Errorf("%d of the %d stored records came through the stream", len(streamed), len(stored))
	}

	// The sends, against the roles: parse's allowed by its role, and no other function's.
	acct, name := d.stack.Physical.Account, stream[strings.LastIndex(stream, "/")+1:]
	arn := "arn:aws:sqs:" + d.stack.Physical.Region + ":" + acct + ":" + name
	for _, fn := range d.crawlFunctions() {
		calls := d.calls(fn)
		sends := 0
		for _, c := range calls {
			if c.Resource == arn {
				sends++
			}
		}
		switch {
		case fn == "parse" && sends == 0:
			t.Errorf("parse: no call on the stream %s was recorded", arn)
		case fn != "parse" && sends > 0:
			t.Errorf("%s: %d calls on the stream %s; only parse sends to it", fn, sends, arn)
		}
		if fn == "parse" {
			checkAllowed(t, fn, d.stack.Functions[fn], calls)
		}
	}
}

// storedRecords reads every records file in the deployment's bucket, by URL.
func storedRecords(t *testing.T, d *deployment) map[string]records.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bucket := d.stack.Functions["parse"].Env["CRAWL_BUCKET"]
	list, err := d.clients.S3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(records.Prefix)})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]records.Record{}
	for _, o := range list.Contents {
		obj, err := d.clients.S3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: o.Key})
		if err != nil {
			t.Fatal(err)
		}
		var body bytes.Buffer
		_, err = body.ReadFrom(obj.Body)
		obj.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(&body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var r records.Record
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("record in %s: %v", aws.ToString(o.Key), err)
			}
			out[r.URL] = r
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
