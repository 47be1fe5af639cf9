package telemetry_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/crawlstack/crawlstack/shared/observe/metrics"

	"github.com/aws/aws-lambda-go/events"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/safelog"
	"github.com/crawlstack/crawlstack/shared/crawl/web/httpfetch"
	"github.com/crawlstack/crawlstack/shared/observe/telemetry"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// sent keeps what it was asked to send.
type sent struct{ entries []queue.Entry }

func (s *sent) SendBatch(_ context.Context, _ string, e []queue.Entry) error {
	s.entries = append(s.entries, e...)
	return nil
}

func useMemory(t *testing.T) *tracetest.InMemoryExporter {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	t.Cleanup(telemetry.Use(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithRawSpanLimits(telemetry.Limits()))))
	return exp
}

func attr(s tracetest.SpanStub, key string) string {
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			return a.Value.Emit()
		}
	}
	return ""
}

func TestSenderWithTelemetryOffAddsNothing(t *testing.T) {
	var s sent
	in := []queue.Entry{{ID: "0", Body: "b"}}
	if err := (telemetry.Sender{Next: &s}).SendBatch(context.Background(), "q", in); err != nil {
		t.Fatal(err)
	}
	if len(s.entries) != 1 || s.entries[0].Attributes != nil {
		t.Errorf("sent %+v, want the entry as it was", s.entries)
	}
}

func TestSenderInjectsItsSpanAndKeepsTheCallersEntries(t *testing.T) {
	exp := useMemory(t)
	var s sent
	in := []queue.Entry{{ID: "0", Body: "a", Attributes: map[string]string{"k": "v"}}, {ID: "1", Body: "b"}}
	if err := (telemetry.Sender{Next: &s}).SendBatch(context.Background(), "https://sqs.example/123/crawl-fetch", in); err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	if len(spans) != 1 || spans[0].Name != "send crawl-fetch" || spans[0].SpanKind != trace.SpanKindProducer {
		t.Fatalf("spans %+v, want one producer span named send crawl-fetch", spans)
	}
	want := "00-" + spans[0].SpanContext.TraceID().String() + "-" + spans[0].SpanContext.SpanID().String() + "-01"
	for i, e := range s.entries {
		if got := e.Attributes[telemetry.TraceParent]; got != want {
			t.Errorf("entry %d traceparent %q, want %q", i, got, want)
		}
	}
	if s.entries[0].Attributes["k"] != "v" {
		t.Errorf("the entry's own attribute was lost: %v", s.entries[0].Attributes)
	}
	if len(in[0].Attributes) != 1 || in[1].Attributes != nil {
		t.Errorf("the caller's entries were changed: %+v", in)
	}
}

func TestRecordSpanLinksToItsProducerAndCarriesTheErrorClass(t *testing.T) {
	exp := useMemory(t)
	tp := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	rec := events.SQSMessage{MessageId: "m1", Body: "x", EventSourceARN: "arn:aws:sqs:us-east-1:1:crawl-parse",
		MessageAttributes: map[string]events.SQSMessageAttribute{telemetry.TraceParent: {DataType: "String", StringValue: &tp}}}
	_, span := telemetry.StartRecord(context.Background(), rec)
	telemetry.EndRecord(span, errclass.New(errclass.Parse, errors.New("bad json")))
	bad := "not a trace context"
	rec.MessageAttributes[telemetry.TraceParent] = events.SQSMessageAttribute{DataType: "String", StringValue: &bad}
	_, span = telemetry.StartRecord(context.Background(), rec)
	telemetry.EndRecord(span, nil)

	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	s := spans[0]
	if s.Name != "process crawl-parse" || len(s.Links) != 1 || s.Links[0].SpanContext.SpanID().String() != "00f067aa0ba902b7" {
		t.Errorf("record span %s links %v, want process crawl-parse linked to 00f067aa0ba902b7", s.Name, s.Links)
	}
	if got := attr(s, "error.type"); got != "parse" {
		t.Errorf("error.type = %q, want parse", got)
	}
	if len(spans[1].Links) != 0 {
		t.Errorf("a malformed traceparent made links %v", spans[1].Links)
	}
}

// getter answers every fetch with resp and err.
type getter struct {
	resp *httpfetch.Response
	err  error
}

func (g getter) GetFollowing(context.Context, string, func(*url.URL) error) (*httpfetch.Response, error) {
	return g.resp, g.err
}
func (g getter) GetLimited(context.Context, string, int64, int) (*httpfetch.Response, error) {
	return g.resp, g.err
}

func TestFetchSpans(t *testing.T) {
	long := "http://127.0.0.1/" + strings.Repeat("x", 2000)
	tests := []struct {
		name      string
		g         getter
		url       string
		status    string
		errorType string
	}{
		{"ok", getter{resp: &httpfetch.Response{Status: 200, Body: []byte("hello")}}, "http://127.0.0.1/", "200", ""},
		{"a 503 is a response of class http_5xx", getter{resp: &httpfetch.Response{Status: 503}}, "http://127.0.0.1/", "503", "http_5xx"},
		{"an error has its class", getter{err: errclass.New(errclass.Timeout, errors.New("deadline"))}, "http://127.0.0.1/", "", "timeout"},
		{"a long URL is cut", getter{resp: &httpfetch.Response{Status: 200}}, long, "200", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exp := useMemory(t)
			if _, err := (telemetry.Fetches{Next: tt.g}).GetFollowing(context.Background(), tt.url, nil); !errors.Is(err, tt.g.err) {
				t.Fatalf("error %v, want %v", err, tt.g.err)
			}
			spans := exp.GetSpans()
			if len(spans) != 1 || spans[0].SpanKind != trace.SpanKindClient {
				t.Fatalf("spans %+v, want one client span", spans)
			}
			s := spans[0]
			if got := attr(s, "http.response.status_code"); got != tt.status {
				t.Errorf("status %q, want %q", got, tt.status)
			}
			if got := attr(s, "error.type"); got != tt.errorType {
				t.Errorf("error.type %q, want %q", got, tt.errorType)
			}
			if got := attr(s, "url.full"); len(got) > safelog.MaxValueBytes || !strings.HasPrefix(tt.url, got[:min(len(got), 20)]) {
				t.Errorf("url.full of %d bytes %.40q, want at most %d bytes of the URL", len(got), got, safelog.MaxValueBytes)
			}
		})
	}
}

func TestSetup(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	ctx := context.Background()
	tel, err := telemetry.Setup(ctx, env(nil), telemetry.Options{Service: "s"})
	if err != nil || telemetry.Enabled() {
		t.Fatalf("with no endpoint: %v, enabled %v; want off", err, telemetry.Enabled())
	}
	if err := tel.Flush(ctx); err != nil {
		t.Errorf("Flush with nothing installed: %v", err)
	}
	if _, err := telemetry.Setup(ctx, env(nil), telemetry.Options{Endpoint: "localhost:4318"}); err == nil {
		t.Errorf("an endpoint without a scheme was accepted")
	}
	if _, err := telemetry.Setup(ctx, env(map[string]string{telemetry.EnvEndpoint: "http://127.0.0.1:1", telemetry.EnvTracesExporter: "none"}), telemetry.Options{}); err != nil || telemetry.Enabled() {
		t.Fatalf("OTEL_TRACES_EXPORTER=none: %v, enabled %v; want off", err, telemetry.Enabled())
	}
	// An endpoint that records what it is sent: both signals arrive, each at its own path.
	var mu sync.Mutex
	posted := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		posted[r.Method+" "+r.URL.Path]++
		mu.Unlock()
	}))
	defer srv.Close()
	on, err := telemetry.Setup(ctx, env(map[string]string{telemetry.EnvEndpoint: srv.URL}), telemetry.Options{Service: "s"})
	if err != nil || !telemetry.Enabled() || !metrics.Enabled() {
		t.Fatalf("with an endpoint: %v, tracing %v, metrics %v; want both on", err, telemetry.Enabled(), metrics.Enabled())
	}
	metrics.Admitted(ctx, 1)
	_, span := telemetry.StartRecord(ctx, events.SQSMessage{MessageId: "m"})
	telemetry.EndRecord(span, nil)
	if err := on.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if telemetry.Enabled() || metrics.Enabled() {
		t.Errorf("still on after Shutdown")
	}
	mu.Lock()
	defer mu.Unlock()
	if posted["POST /v1/traces"] == 0 || posted["POST /v1/metrics"] == 0 {
		t.Errorf("the endpoint was sent %v, want POST /v1/traces and /v1/metrics", posted)
	}
}
