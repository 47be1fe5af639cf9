package httpfetch

import (
	"context"
	"net/http"
)

type jarKey struct{}

// WithJar has the requests made with ctx carry the cookies of jar and give it the cookies their
// answers set, on every redirect hop (net/http's http.Client.Jar): a crawl's session with a host.
// The cookies a request carried are in its Response.Request header, as sent.
func WithJar(ctx context.Context, jar http.CookieJar) context.Context {
	return context.WithValue(ctx, jarKey{}, jar)
}

func jarOf(ctx context.Context) http.CookieJar {
	j, _ := ctx.Value(jarKey{}).(http.CookieJar)
	return j
}
