package sqsbatch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/observe/telemetry"
)

// TestAFailedRecordsLogLineNamesItsSpan: with tracing on, each record runs in a span of its own,
// and the line that reports its failure carries that span's trace_id and span_id.
func TestAFailedRecordsLogLineNamesItsSpan(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	defer telemetry.Use(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)))()
	var logs bytes.Buffer
	r := &Runner{Log: slog.New(telemetry.LogHandler(slog.NewJSONHandler(&logs, nil)))}
	ev := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "ok"}, {MessageId: "bad"}}}
	resp := r.Run(context.Background(), ev, func(_ context.Context, rec events.SQSMessage) error {
		if rec.MessageId == "bad" {
			return errclass.New(errclass.Internal, errors.New("table down"))
		}
		return nil
	})
	if len(resp.BatchItemFailures) != 1 {
		t.Fatalf("failures %v, want the bad record", resp.BatchItemFailures)
	}
	var spanOf = map[string][2]string{}
	for _, s := range exp.GetSpans() {
		for _, a := range s.Attributes {
			if a.Key == "messaging.message.id" {
				spanOf[a.Value.AsString()] = [2]string{s.SpanContext.TraceID().String(), s.SpanContext.SpanID().String()}
			}
		}
	}
	if len(spanOf) != 2 {
		t.Fatalf("record spans %v, want one per record", spanOf)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("log lines %q, want one", lines)
	}
	var line struct {
		Msg       string `json:"msg"`
		MessageID string `json:"messageId"`
		TraceID   string `json:"trace_id"`
		SpanID    string `json:"span_id"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &line); err != nil {
		t.Fatal(err)
	}
	if want := spanOf["bad"]; line.MessageID != "bad" || line.TraceID != want[0] || line.SpanID != want[1] {
		t.Errorf("line %s, want the bad record's trace %s and span %s", lines[0], want[0], want[1])
	}
}

// TestLinesWithoutASpanAreUnchanged: with tracing off nothing is added.
func TestLinesWithoutASpanAreUnchanged(t *testing.T) {
	var logs bytes.Buffer
	r := &Runner{Log: slog.New(telemetry.LogHandler(slog.NewJSONHandler(&logs, nil)))}
	r.Run(context.Background(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: "bad"}}},
		func(context.Context, events.SQSMessage) error { return errors.New("no") })
	if !strings.Contains(logs.String(), `"messageId":"bad"`) || strings.Contains(logs.String(), "trace_id") {
		t.Errorf("log %s: want the failure without a trace_id", logs.String())
	}
}
