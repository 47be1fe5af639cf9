package telemetry_test

import (
	"context"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/crawlstack/crawlstack/shared/observe/telemetry"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

type discard struct{}

func (discard) SendBatch(context.Context, string, []queue.Entry) error { return nil }

// benchRecord is one record's telemetry: its span and a send of one message from it.
func benchRecord(b *testing.B) {
	tp := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	rec := events.SQSMessage{MessageId: "m", Body: "{}", EventSourceARN: "arn:aws:sqs:us-east-1:1:crawl-fetch",
		Attributes:        map[string]string{"SentTimestamp": "1700000000000"},
		MessageAttributes: map[string]events.SQSMessageAttribute{telemetry.TraceParent: {DataType: "String", StringValue: &tp}}}
	send := telemetry.Sender{Next: discard{}}
	entries := []queue.Entry{{ID: "0", Body: "{}"}}
	b.ReportAllocs()
	for b.Loop() {
		ctx, span := telemetry.StartRecord(context.Background(), rec)
		_ = send.SendBatch(ctx, "crawl-parse", entries)
		telemetry.EndRecord(span, nil)
	}
}

// BenchmarkRecordTelemetryOff is what a record pays with no exporter configured.
func BenchmarkRecordTelemetryOff(b *testing.B) { benchRecord(b) }

// BenchmarkRecordTelemetryOn is the same with spans recorded and handed to an exporter that
// drops them: the SDK's share of the cost, without a network's.
func BenchmarkRecordTelemetryOn(b *testing.B) {
	defer telemetry.Use(sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter())))()
	benchRecord(b)
}
