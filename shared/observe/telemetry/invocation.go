package telemetry

import (
	"context"
	"time"

	"github.com/crawlstack/crawlstack/shared/observe/metrics"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// flushTimeout bounds the export at the end of an invocation, so that an unreachable collector
// costs each invocation at most this much.
const flushTimeout = 2 * time.Second

// Invocation wraps a handler so that each invocation has a span named fn, the parent of its
// records' spans. An SQS batch's span counts its records and the records that failed. After each
// invocation the spans and metrics are flushed through t (nil: not flushed), as a Lambda function
// must before its container is frozen. With neither traces nor metrics on it calls h and nothing
// else.
func Invocation[In, Out any](t *Telemetry, fn string, h func(context.Context, In) (Out, error)) func(context.Context, In) (Out, error) {
	return func(ctx context.Context, in In) (Out, error) {
		if !Enabled() {
			if !metrics.Enabled() {
				return h(ctx, in)
			}
			out, err := h(ctx, in)
			flush(ctx, t)
			return out, err
		}
		attrs := []attribute.KeyValue{semconv.FaaSName(fn)}
		if lc, ok := lambdacontext.FromContext(ctx); ok {
			attrs = append(attrs, semconv.FaaSInvocationID(lc.AwsRequestID))
		}
		opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}
		if ev, ok := any(in).(events.SQSEvent); ok {
			attrs = append(attrs, semconv.FaaSTriggerPubSub, semconv.MessagingSystemAWSSQS,
				semconv.MessagingBatchMessageCount(len(ev.Records)))
			// As a batch receive in OpenTelemetry's messaging conventions: the invocation links to
			// every record's producer, and each record's own span links to its producer again.
			opts = append(opts, trace.WithLinks(producers(ev)...))
		}
		ctx, span := tracer().Start(ctx, fn, append(opts, trace.WithAttributes(attrs...))...)
		out, err := h(ctx, in)
		if resp, ok := any(out).(events.SQSEventResponse); ok {
			span.SetAttributes(attribute.Int("crawl.batch.failures", len(resp.BatchItemFailures)))
		}
		if err != nil {
			span.SetStatus(codes.Error, "invocation failed")
		}
		span.End()
		flush(ctx, t)
		return out, err
	}
}

// flush exports what the invocation recorded, if t was installed.
func flush(ctx context.Context, t *Telemetry) {
	if t == nil {
		return
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
	_ = t.Flush(fctx) // lost telemetry must not fail the crawl's work; otel's error handler logs it
	cancel()
}

// producers are the links to the producers of a batch's records (one per distinct producer).
func producers(ev events.SQSEvent) []trace.Link {
	var links []trace.Link
	seen := map[trace.SpanID]bool{}
	for _, rec := range ev.Records {
		if p := Producer(rec); p.IsValid() && !seen[p.SpanID()] {
			seen[p.SpanID()] = true
			links = append(links, trace.Link{SpanContext: p})
		}
	}
	return links
}
