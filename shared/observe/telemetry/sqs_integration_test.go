package telemetry_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/crawlstack/crawlstack/shared/aws/sqsqueue"
	"github.com/crawlstack/crawlstack/shared/handler/sqsbatch"
	"github.com/crawlstack/crawlstack/shared/observe/telemetry"
	"github.com/crawlstack/crawlstack/shared/port/queue"
	"github.com/crawlstack/crawlstack/shared/testkit/awstest"
)

// TestIntegrationTraceContextSurvivesSQS sends a message through the traced sender to SQS at the
// configured endpoint, receives it, hands it to a handler as the JSON event Lambda would deliver,
// and finds the record's span linked to the send's span, in the send's trace.
func TestIntegrationTraceContextSurvivesSQS(t *testing.T) {
	cfg := awstest.Config(t)
	awstest.RequireService(t, "SQS")
	exp := tracetest.NewInMemoryExporter()
	defer telemetry.Use(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)))()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q := sqsqueue.New(sqs.NewFromConfig(cfg))
	url, err := q.CreateQueue(ctx, awstest.UniqueName(t, "trace"), queue.Config{Visibility: 30 * time.Second})
	if err != nil {
		t.Fatalf("CreateQueue: %v", err)
	}
	if err := (telemetry.Sender{Next: q}).SendBatch(ctx, url, []queue.Entry{{ID: "0", Body: `{"url":"http://127.0.0.1/"}`}}); err != nil {
		t.Fatalf("SendBatch: %v", err)
	}
	var msgs []queue.Message
	for deadline := time.Now().Add(10 * time.Second); len(msgs) == 0 && time.Now().Before(deadline); {
		if msgs, err = q.Receive(ctx, url, 1, 30*time.Second, time.Second); err != nil {
			t.Fatalf("Receive: %v", err)
		}
	}
	if len(msgs) != 1 {
		t.Fatalf("received %d messages, want 1", len(msgs))
	}
	raw, err := json.Marshal(sqsbatch.Event("trace", msgs)) // what the event source mapping delivers
	if err != nil {
		t.Fatal(err)
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	runner := &sqsbatch.Runner{}
	handle := telemetry.Invocation(nil, "fetch", func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		return runner.Run(ctx, ev, func(context.Context, events.SQSMessage) error { return nil }), nil
	})
	if _, err := handle(ctx, ev); err != nil {
		t.Fatal(err)
	}

	var send, record tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		switch s.SpanKind {
		case trace.SpanKindProducer:
			send = s
		case trace.SpanKindConsumer:
			record = s
		}
	}
	if !send.SpanContext.IsValid() || !record.SpanContext.IsValid() {
		t.Fatalf("spans %v: want a send span and a record span", exp.GetSpans())
	}
	if len(record.Links) != 1 || record.Links[0].SpanContext.SpanID() != send.SpanContext.SpanID() ||
		record.Links[0].SpanContext.TraceID() != send.SpanContext.TraceID() {
		t.Errorf("record span links %v, want one link to the send span %s", record.Links, send.SpanContext.SpanID())
	}
}
