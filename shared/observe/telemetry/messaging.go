package telemetry

import (
	"context"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/crawlstack/crawlstack/shared/observe/metrics"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// TraceParent is the message attribute that carries the producer's span (W3C trace context), as
// OpenTelemetry's messaging conventions name it.
const TraceParent = "traceparent"

// Sender is a queue.Sender that makes a producer span for each batch it sends and puts that span's
// trace context into every message's attributes, so that the consumer's record span can link to
// it. With telemetry off it only passes the batch on.
type Sender struct {
	Next queue.Sender
}

var _ queue.Sender = Sender{}

// SendBatch sends entries through Next, each with the trace context of this send.
func (s Sender) SendBatch(ctx context.Context, q string, entries []queue.Entry) error {
	if !Enabled() || len(entries) == 0 {
		return s.Next.SendBatch(ctx, q, entries)
	}
	name := QueueName(q)
	ctx, span := tracer().Start(ctx, "send "+name, trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(semconv.MessagingSystemAWSSQS, semconv.MessagingOperationTypeSend,
			semconv.MessagingOperationName("send"), semconv.MessagingDestinationName(name),
			semconv.MessagingBatchMessageCount(len(entries))))
	defer span.End()
	out := make([]queue.Entry, len(entries))
	for i, e := range entries {
		attrs := make(map[string]string, len(e.Attributes)+2)
		maps.Copy(attrs, e.Attributes)
		propagator.Inject(ctx, carrier(attrs))
		e.Attributes = attrs
		out[i] = e
	}
	err := s.Next.SendBatch(ctx, q, out)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "send failed")
	}
	return err
}

// carrier is a propagation.TextMapCarrier over string message attributes.
type carrier map[string]string

func (c carrier) Get(key string) string { return c[key] }
func (c carrier) Set(key, value string) { c[key] = value }
func (c carrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// recordCarrier reads the trace context from an SQS record's message attributes.
type recordCarrier map[string]events.SQSMessageAttribute

func (c recordCarrier) Get(key string) string {
	if a, ok := c[key]; ok && a.StringValue != nil {
		return *a.StringValue
	}
	return ""
}
func (c recordCarrier) Set(string, string) {}
func (c recordCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// Producer returns the span context that rec's producer put into its attributes (invalid when
// there is none, or it is malformed).
func Producer(rec events.SQSMessage) trace.SpanContext {
	return trace.SpanContextFromContext(propagator.Extract(context.Background(), recordCarrier(rec.MessageAttributes)))
}

// StartRecord starts the span of one SQS record, a child of the invocation's span in ctx, linked
// to the span that sent the record, and records how long the record waited in its queue
// (the message_age breakdown, metrics.MessageAge). End it with EndRecord. With telemetry off it returns ctx and a span that
// records nothing.
func StartRecord(ctx context.Context, rec events.SQSMessage) (context.Context, trace.Span) {
	if !Enabled() && !metrics.Enabled() {
		return ctx, trace.SpanFromContext(context.Background())
	}
	name := QueueName(rec.EventSourceARN)
	if ms, err := strconv.ParseInt(rec.Attributes["SentTimestamp"], 10, 64); err == nil {
		metrics.MessageAge(ctx, name, time.UnixMilli(ms))
	}
	if !Enabled() {
		return ctx, trace.SpanFromContext(context.Background())
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(semconv.MessagingSystemAWSSQS, semconv.MessagingOperationTypeProcess,
			semconv.MessagingOperationName("process"), semconv.MessagingDestinationName(name),
			semconv.MessagingMessageID(rec.MessageId), semconv.MessagingMessageBodySize(len(rec.Body)))}
	if p := Producer(rec); p.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: p}))
	}
	return tracer().Start(ctx, "process "+name, opts...)
}

// EndRecord ends a record's span with the record's outcome: an error sets the span's status and
// its error.type to the error's class.
func EndRecord(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.SetAttributes(semconv.ErrorTypeKey.String(string(errclass.Of(err))))
		span.SetStatus(codes.Error, string(errclass.Of(err)))
	}
	span.End()
}

// QueueName is the queue's name in an address: the last part of an SQS queue URL or ARN, or an
// embedded queue's name as it is.
func QueueName(addr string) string {
	if i := strings.LastIndexAny(addr, "/:"); i >= 0 {
		return addr[i+1:]
	}
	return addr
}
