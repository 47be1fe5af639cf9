// Package telemetry is the crawler's OpenTelemetry wiring: the tracer and meter providers that an
// OTLP endpoint in the environment asks for (or, for metrics in Lambda, CloudWatch Embedded Metric
// Format on stdout), the crawl's instruments, the span of each invocation and of each SQS record, the
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
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/crawlstack/crawlstack/shared/observe/metrics"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/crawlstack/crawlstack/shared/crawl/safelog"
)

// ScopeName names the crawler's tracer (and meter).
const ScopeName = metrics.ScopeName

// The environment variables that Setup reads; the OTLP exporter reads the rest of the standard
// OTEL_EXPORTER_OTLP_* set (headers, timeout, protocol details) itself.
const (
	EnvEndpoint        = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint  = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvTracesExporter  = "OTEL_TRACES_EXPORTER" // "none" turns tracing off even with an endpoint
	EnvServiceName     = "OTEL_SERVICE_NAME"
	EnvMetricsEndpoint = "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"
	EnvMetricsExporter = "OTEL_METRICS_EXPORTER" // "none" turns metrics off
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
	provider *sdktrace.TracerProvider // nil: no tracing
	meter    *sdkmetric.MeterProvider // nil: no metrics
}

// Flush exports the spans ended and the metrics recorded so far. A Lambda function calls it at
// the end of each invocation, before the container may be frozen.
func (t *Telemetry) Flush(ctx context.Context) error {
	if t == nil {
		return nil
	}
	var errs []error
	if t.provider != nil {
		if err := t.provider.ForceFlush(ctx); err != nil {
			errs = append(errs, fmt.Errorf("flush spans: %w", err))
		}
	}
	if t.meter != nil {
		if err := t.meter.ForceFlush(ctx); err != nil {
			errs = append(errs, fmt.Errorf("flush metrics: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Shutdown flushes and stops the exporters.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	var errs []error
	if t.provider != nil {
		enabled.Store(false)
		if err := t.provider.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stop tracing: %w", err))
		}
	}
	if t.meter != nil {
		metrics.Off()
		if err := t.meter.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stop metrics: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Options are what a caller may set beyond the environment.
type Options struct {
	// Service is the service.name when OTEL_SERVICE_NAME is unset ("crawlstack-fetch" ...).
	Service string
	// Endpoint, if set, is the OTLP/HTTP endpoint (http://host:4318), as `crawl run --otel` gives
	// it; it wins over the environment.
	Endpoint string
	// EMF, if set, receives the metrics as CloudWatch Embedded Metric Format when no OTLP endpoint
	// is set: a Lambda function's stdout.
	EMF io.Writer
}

// Namespace is the CloudWatch namespace of the EMF metrics unless CRAWL_METRICS_NAMESPACE names
// another.
const Namespace = "Crawlstack"

// EnvNamespace overrides Namespace.
const EnvNamespace = "CRAWL_METRICS_NAMESPACE"

// Setup installs what the options and the environment ask for, and otherwise leaves everything
// off:
//   - traces: an OTLP/HTTP exporter when opts.Endpoint, OTEL_EXPORTER_OTLP_ENDPOINT or
//     OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, unless OTEL_TRACES_EXPORTER=none;
//   - metrics: an OTLP/HTTP exporter when opts.Endpoint, OTEL_EXPORTER_OTLP_ENDPOINT or
//     OTEL_EXPORTER_OTLP_METRICS_ENDPOINT is set, else EMF lines on opts.EMF when set; none when
//     OTEL_METRICS_EXPORTER=none.
//
// It fails on an endpoint the exporters cannot use, so that a mistyped setting stops a function at
// init.
func Setup(ctx context.Context, getenv func(string) string, opts Options) (*Telemetry, error) {
	if e := opts.Endpoint; e != "" && !strings.HasPrefix(e, "http://") && !strings.HasPrefix(e, "https://") {
		return nil, fmt.Errorf("OTLP endpoint %q: want http://host:port or https://host:port", e)
	}
	name := getenv(EnvServiceName)
	if name == "" {
		name = opts.Service
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(name)))
	if err != nil && !errors.Is(err, resource.ErrSchemaURLConflict) {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}
	t := &Telemetry{}
	if url := endpointURL(opts.Endpoint, getenv(EnvTracesEndpoint), getenv(EnvEndpoint), "traces"); url != "" &&
		!strings.EqualFold(getenv(EnvTracesExporter), "none") {
		exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(url))
		if err != nil {
			return nil, fmt.Errorf("OTLP trace exporter: %w", err)
		}
		t.provider = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res),
			sdktrace.WithRawSpanLimits(Limits()))
		Use(t.provider)
	}
	var mexp sdkmetric.Exporter
	murl := endpointURL(opts.Endpoint, getenv(EnvMetricsEndpoint), getenv(EnvEndpoint), "metrics")
	switch {
	case strings.EqualFold(getenv(EnvMetricsExporter), "none"):
	case murl != "":
		if mexp, err = otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(murl)); err != nil {
			return nil, fmt.Errorf("OTLP metric exporter: %w", err)
		}
	case opts.EMF != nil:
		ns := getenv(EnvNamespace)
		if ns == "" {
			ns = Namespace
		}
		mexp = &EMF{W: opts.EMF, Namespace: ns}
	}
	if mexp != nil {
		// The reader's own period is long: a Lambda function flushes after each invocation and
		// crawl run at its end, so that nothing is exported from a frozen container.
		t.meter = sdkmetric.NewMeterProvider(sdkmetric.WithResource(res),
			sdkmetric.WithReader(sdkmetric.NewPeriodicReader(mexp, sdkmetric.WithInterval(time.Minute))))
		metrics.UseMeter(t.meter)
	}
	return t, nil
}

// endpointURL is the OTLP/HTTP URL of a signal ("traces", "metrics"): the flag's base endpoint,
// else the signal's own variable as it is, else the general variable's base; "" for none. The
// exporters would read the variables themselves, but from the process's environment: reading them
// here through getenv keeps one source of settings.
func endpointURL(flag, signalVar, baseVar, signal string) string {
	switch {
	case flag != "":
		return strings.TrimSuffix(flag, "/") + "/v1/" + signal
	case signalVar != "":
		return signalVar
	case baseVar != "":
		return strings.TrimSuffix(baseVar, "/") + "/v1/" + signal
	}
	return ""
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
