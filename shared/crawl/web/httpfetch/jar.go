package httpfetch

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
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

// Send is a request other than a plain GET: a login's (a form POST, or a request with
// credentials in its headers).
type Send struct {
	Method string
	// Body is the request's body (nil: none), of the type its Content-Type header says.
	Body []byte
	// Header is set over the request's other headers (but those the client sets itself).
	Header http.Header
}

// Do sends s to rawURL as GetFollowing sends its GET, with the client's limits, the SSRF guard
// on every hop, and follow asked about each redirect (net/http turns a POST answered 302 or 303
// into a GET of the target, as browsers do).
func (c *Client) Do(ctx context.Context, rawURL string, s Send, follow func(target *url.URL) error) (*Response, error) {
	lim := c.limits()
	lim.follow, lim.send = follow, &s
	resp, err := c.get(ctx, rawURL, lim)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", s.Method, rawURL, err)
	}
	return resp, nil
}
