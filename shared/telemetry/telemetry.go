// Package telemetry is the crawler's OpenTelemetry wiring: the tracer provider that an OTLP
// endpoint in the environment asks for, the span of each invocation and of each SQS record, the
// trace context carried from a producer to its consumers in the messages' attributes, and the
// spans of the outbound fetches.
//
// With no exporter configured nothing is recorded and nothing is injected into messages: every
// helper checks Enabled first (one atomic load), so a crawl without telemetry pays for no span.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/crawlstack/crawlstack/shared/safelog"
)

// ScopeName names the crawler's tracer (and meter).
const ScopeName = "github.com/crawlstack/crawlstack"

// The environment variables that Setup reads; the OTLP exporter reads the rest of the standard
// OTEL_EXPORTER_OTLP_* set (headers, timeout, protocol details) itself.
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvTracesExporter = "OTEL_TRACES_EXPORTER" // "none" turns tracing off even with an endpoint
	EnvServiceName    = "OTEL_SERVICE_NAME"
)

var enabled atomic.Bool

// Enabled reports whether spans are being recorded and exported.
func Enabled() bool { return enabled.Load() }

func tracer() trace.Tracer { return otel.Tracer(ScopeName) }

// propagator carries the W3C trace context (traceparent, tracestate), whatever the global
// propagator is: the message attributes must mean the same thing to every consumer.
var propagator = propagation.TraceContext{}

// Telemetry is what Setup installed.
type Telemetry struct {
	provider *sdktrace.TracerProvider // nil: nothing installed
}

// Flush exports the spans ended so far. A Lambda function calls it at the end of each invocation,
// before the container may be frozen.
func (t *Telemetry) Flush(ctx context.Context) error {
	if t == nil || t.provider == nil {
		return nil
	}
	if err := t.provider.ForceFlush(ctx); err != nil {
		return fmt.Errorf("flush spans: %w", err)
	}
	return nil
}

// Shutdown flushes and stops the exporter.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil || t.provider == nil {
		return nil
	}
	enabled.Store(false)
	if err := t.provider.Shutdown(ctx); err != nil {
		return fmt.Errorf("stop tracing: %w", err)
	}
	return nil
}

// Options are what a caller may set beyond the environment.
type Options struct {
	// Service is the service.name when OTEL_SERVICE_NAME is unset ("crawlstack-fetch" ...).
	Service string
	// Endpoint, if set, is the OTLP/HTTP endpoint (http://host:4318), as `crawl run --otel` gives
	// it; it wins over the environment.
	Endpoint string
}

// Setup installs an OTLP/HTTP trace exporter when opts.Endpoint or the standard variables name an
// endpoint, and otherwise leaves OpenTelemetry's no-op provider in place. It fails on an endpoint
// the exporter cannot use, so that a mistyped setting stops a function at init.
func Setup(ctx context.Context, getenv func(string) string, opts Options) (*Telemetry, error) {
	endpoint := opts.Endpoint
	if endpoint == "" && strings.EqualFold(getenv(EnvTracesExporter), "none") {
		return &Telemetry{}, nil
	}
	if endpoint == "" && getenv(EnvEndpoint) == "" && getenv(EnvTracesEndpoint) == "" {
		return &Telemetry{}, nil
	}
	var eopts []otlptracehttp.Option
	if endpoint != "" {
		if !strings.HasPrefix(endpoint, "http://") && !strings.HasPrefix(endpoint, "https://") {
			return nil, fmt.Errorf("OTLP endpoint %q: want http://host:port or https://host:port", endpoint)
		}
		eopts = append(eopts, otlptracehttp.WithEndpointURL(strings.TrimSuffix(endpoint, "/")+"/v1/traces"))
	}
	exp, err := otlptracehttp.New(ctx, eopts...)
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	name := getenv(EnvServiceName)
	if name == "" {
		name = opts.Service
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(name)))
	if err != nil && !errors.Is(err, resource.ErrSchemaURLConflict) {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res),
		sdktrace.WithRawSpanLimits(Limits()))
	Use(tp)
	return &Telemetry{provider: tp}, nil
}

// Limits bounds what one span keeps: attribute values are cut to the length a log line keeps
// (strings from the web are untrusted), and links and events to a batch's worth.
func Limits() sdktrace.SpanLimits {
	l := sdktrace.NewSpanLimits()
	l.AttributeValueLengthLimit = safelog.MaxValueBytes
	l.LinkCountLimit = 128
	return l
}

// Use installs tp as the global tracer provider and turns the helpers on. It returns a function
// that puts back the provider and the state that were there before; tests call Use with a
// provider over an in-memory exporter.
func Use(tp trace.TracerProvider) (restore func()) {
	prevTP, prevProp, prevOn := otel.GetTracerProvider(), otel.GetTextMapPropagator(), enabled.Load()
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	enabled.Store(true)
	return func() {
		otel.SetTracerProvider(prevTP)
		otel.SetTextMapPropagator(prevProp)
		enabled.Store(prevOn)
	}
}
