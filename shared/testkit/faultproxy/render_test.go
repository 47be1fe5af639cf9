package faultproxy_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/crawlstack/crawlstack/shared/aws/sqsqueue"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/records"
	"github.com/crawlstack/crawlstack/shared/crawl/scope"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
	"github.com/crawlstack/crawlstack/shared/handler/parser"
	"github.com/crawlstack/crawlstack/shared/handler/renderer"
	"github.com/crawlstack/crawlstack/shared/handler/renderer/renderertest"
	"github.com/crawlstack/crawlstack/shared/testkit/embedtest"
	"github.com/crawlstack/crawlstack/shared/testkit/faultproxy"
)

type renderCrawls struct{ c *crawlspec.Crawl }

func (r renderCrawls) For(context.Context, string) (*crawlspec.Crawl, error) { return r.c, nil }

// TestIntegrationRenderSendAppliedAndAnswerLostParsesOnce: the render step's SendMessageBatch to
// the parse queue (SQS on the emulator) is applied and its answer dropped, so the SDK sends it
// again and parse's queue holds the message twice; and the render message itself comes twice.
// Parse, given every copy, records each page once, rendered.
func TestIntegrationRenderSendAppliedAndAnswerLostParsesOnce(t *testing.T) {
	r := newRig(t, faultproxy.Schedule{Seed: 7, Script: map[uint64]faultproxy.Kind{1: faultproxy.ApplyDrop}}, 0, 0)
	parseQ := r.newQueue(t)
	be := embedtest.Open(t, "schedule")
	state := crawlstate.New(be.Table)
	settings := renderCrawls{&crawlspec.Crawl{Rules: scope.DefaultRules(), UserAgent: "crawlstack-test/1",
		Spec: &crawlspec.Settings{Version: 1, Render: &crawlspec.Render{Patterns: []string{"."}}}}}
	h := renderer.New(renderer.Config{ParseQueue: parseQ}, renderer.Deps{Parsed: state, Blobs: be.Blobs,
		Send: sqsqueue.New(r.via.sqs), Crawls: settings, Browser: &renderertest.Browser{}})

	const root = "http://127.0.0.1:9/"
	at := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	rec, err := warcfile.EncodeRecord(warcfile.Page{URL: root, Status: 200, Header: http.Header{"Content-Type": {"text/html"}},
		Body: []byte(`<html><body><div data-render-links="/a /b"></div></body></html>`), FetchedAt: at})
	if err != nil {
		t.Fatal(err)
	}
	f, err := warcfile.Assemble("f.warc.gz", at, []warcfile.Record{rec})
	if err != nil {
		t.Fatal(err)
	}
	const key = "pages/c1/2026/12/05/f.warc.gz"
	if err := be.Blobs.Put(context.Background(), key, f.Data, warcfile.ContentType); err != nil {
		t.Fatal(err)
	}
	body, err := message.Encode(message.Parse{Header: message.Header{Crawl: "c1"}, File: key, Pages: []message.Page{{URL: root,
		FinalURL: root, Root: root, Status: 200, ContentType: "text/html", FetchedAt: at, Offset: f.Spans[0].Offset, Length: f.Spans[0].Length}}})
	if err != nil {
		t.Fatal(err)
	}
	msg := events.SQSMessage{MessageId: "m1", Body: body, Attributes: map[string]string{"ApproximateReceiveCount": "1"}}
	again := msg
	again.MessageId = "m1-again"
	if got := embedtest.Failures(t, h.Handle, msg, again); len(got) != 0 {
		t.Fatalf("render failures %v", got)
	}
	if fs := r.p.Faults(); len(fs) != 1 || fs[0].Kind != faultproxy.ApplyDrop || fs[0].Op != "SendMessageBatch" {
		t.Fatalf("fault log %v, want one apply-drop on SendMessageBatch", fs)
	}
	var copies []events.SQSMessage
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		out, err := r.direct.sqs.ReceiveMessage(ctxT(t), &sqs.ReceiveMessageInput{QueueUrl: aws.String(parseQ), MaxNumberOfMessages: 10,
			VisibilityTimeout: 60, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			copies = append(copies, events.SQSMessage{MessageId: aws.ToString(m.MessageId), Body: aws.ToString(m.Body),
				Attributes: map[string]string{"ApproximateReceiveCount": "1"}})
		}
		if len(out.Messages) == 0 && len(copies) > 0 {
			break
		}
	}
	// Two renders of the message, the first of whose sends went out twice: at least three copies.
	if len(copies) < 3 {
		t.Fatalf("parse's queue holds %d copies, want the replayed send's and the duplicate's (3 or more)", len(copies))
	}
	p := parser.New(parser.Config{ScheduleQueue: "schedule", UserAgentToken: "crawlstack", Concurrency: 2},
		parser.Deps{Parsed: state, Counters: state, Blobs: be.Blobs, Send: be.Queue, Crawls: settings})
	for _, c := range copies {
		if got := embedtest.Failures(t, p.Handle, c); len(got) != 0 {
			t.Fatalf("parse failures %v", got)
		}
	}
	keys, err := be.Blobs.List(context.Background(), "records/")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, k := range keys {
		b, err := be.Blobs.Get(context.Background(), k)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var rec records.Record
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatal(err)
			}
			seen++
			if !rec.Rendered || len(rec.OutLinks) != 2 {
				t.Errorf("record %s: rendered %v, links %v", rec.URL, rec.Rendered, rec.OutLinks)
			}
		}
	}
	if seen != 1 {
		t.Errorf("%d records of the one page, want 1", seen)
	}
}
