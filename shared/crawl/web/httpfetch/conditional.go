package httpfetch

import (
	"context"
	"net/http"
)

type conditionalKey struct{}

// WithConditional has the requests made with ctx ask for the page only if it changed since a
// fetch that got these validators: If-None-Match with etag, If-Modified-Since with lastModified
// (RFC 9110, section 13.1), each when not empty. A server whose page did not change answers 304
// Not Modified, with no body. A recrawl sets them (shared/crawl/recrawl).
func WithConditional(ctx context.Context, etag, lastModified string) context.Context {
	if etag == "" && lastModified == "" {
		return ctx
	}
	h := http.Header{}
	if etag != "" {
		h.Set("If-None-Match", etag)
	}
	if lastModified != "" {
		h.Set("If-Modified-Since", lastModified)
	}
	return context.WithValue(ctx, conditionalKey{}, h)
}

// setConditional adds ctx's conditional headers (WithConditional) to h.
func setConditional(ctx context.Context, h http.Header) {
	if c, ok := ctx.Value(conditionalKey{}).(http.Header); ok {
		for k, vs := range c {
			h[k] = vs
		}
	}
}
