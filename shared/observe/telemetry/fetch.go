package telemetry

import (
	"context"
	"net/url"
	"time"

	"github.com/crawlstack/crawlstack/shared/observe/metrics"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/safelog"
	"github.com/crawlstack/crawlstack/shared/crawl/web/httpfetch"
)

// HTTPClient is what the fetcher and the robots.txt cache call on the guarded client
// (*httpfetch.Client).
type HTTPClient interface {
	GetFollowing(ctx context.Context, rawURL string, follow func(target *url.URL) error) (*httpfetch.Response, error)
	GetLimited(ctx context.Context, rawURL string, maxBody int64, maxRedirects int) (*httpfetch.Response, error)
}

var _ HTTPClient = (*httpfetch.Client)(nil)

// Fetches gives every outbound fetch a client span: the URL (cut to a log line's length), the
// final status, the redirects, the body's size, and the error's class. With telemetry off it only
// calls Next.
type Fetches struct {
	Next HTTPClient
}

var _ HTTPClient = Fetches{}

// GetFollowing fetches a page through Next in a span.
func (f Fetches) GetFollowing(ctx context.Context, rawURL string, follow func(target *url.URL) error) (*httpfetch.Response, error) {
	if !Enabled() && !metrics.Enabled() {
		return f.Next.GetFollowing(ctx, rawURL, follow)
	}
	ctx, span, start := startFetch(ctx, rawURL, "page")
	resp, err := f.Next.GetFollowing(ctx, rawURL, follow)
	endFetch(ctx, span, "page", start, resp, err)
	return resp, err
}

// GetLimited fetches a robots.txt file (or any bounded body) through Next in a span.
func (f Fetches) GetLimited(ctx context.Context, rawURL string, maxBody int64, maxRedirects int) (*httpfetch.Response, error) {
	if !Enabled() && !metrics.Enabled() {
		return f.Next.GetLimited(ctx, rawURL, maxBody, maxRedirects)
	}
	ctx, span, start := startFetch(ctx, rawURL, "robots")
	resp, err := f.Next.GetLimited(ctx, rawURL, maxBody, maxRedirects)
	endFetch(ctx, span, "robots", start, resp, err)
	return resp, err
}

func startFetch(ctx context.Context, rawURL, kind string) (context.Context, trace.Span, time.Time) {
	start := time.Now()
	if !Enabled() {
		return ctx, trace.SpanFromContext(context.Background()), start
	}
	ctx, span := tracer().Start(ctx, "GET", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(semconv.HTTPRequestMethodGet, semconv.URLFull(safelog.Truncate(rawURL)),
			attribute.String("crawl.fetch.kind", kind)))
	return ctx, span, start
}

func endFetch(ctx context.Context, span trace.Span, kind string, start time.Time, resp *httpfetch.Response, err error) {
	defer span.End()
	class, size := "", 0
	if resp != nil {
		class, size = string(errclass.FromStatus(resp.Status)), len(resp.Body)
	}
	if err != nil {
		class = string(errclass.Of(err))
	}
	metrics.Fetched(ctx, kind, class, size, time.Since(start))
	if !span.IsRecording() {
		return
	}
	if resp != nil {
		span.SetAttributes(semconv.HTTPResponseStatusCode(resp.Status), semconv.HTTPResponseBodySize(size),
			attribute.Int("crawl.fetch.redirects", len(resp.Redirects)))
		if resp.URL != "" {
			span.SetAttributes(attribute.String("crawl.fetch.final_url", safelog.Truncate(resp.URL)))
		}
	}
	if class != "" {
		span.SetAttributes(semconv.ErrorTypeKey.String(class))
		msg := class
		if err != nil {
			msg = safelog.Truncate(class + ": " + err.Error())
		}
		span.SetStatus(codes.Error, msg)
	}
}
