package renderer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/crawl/web/httpfetch"
	"github.com/crawlstack/crawlstack/shared/crawl/web/render"
	"github.com/crawlstack/crawlstack/shared/crawl/web/robots"
)

// Getter fetches a sub-request (httpfetch.Client, whose dials the SSRF guard checks). It follows
// a redirect only where follow allows.
type Getter interface {
	GetFollowing(ctx context.Context, rawURL string, follow func(target *url.URL) error) (*httpfetch.Response, error)
}

// RobotsChecker answers robots.txt questions (robots.Cache).
type RobotsChecker interface {
	Check(ctx context.Context, u *url.URL) (robots.Decision, error)
}

// URLGuard refuses URLs that point at non-public addresses, other schemes or ports
// (netguard.Guard). The HTTP client checks each dial again.
type URLGuard interface {
	CheckURL(u *url.URL) error
}

// Web is what a page's sub-requests are made with: fetch's HTTP client, robots.txt cache and
// address guard (pipeline.Fetching).
type Web struct {
	HTTP   Getter
	Robots RobotsChecker
	Guard  URLGuard
	// Now is the clock of the scope's trap rules (nil: time.Now).
	Now func() time.Time
}

// ErrRefused is what a Loader's refusals wrap.
var ErrRefused = errors.New("sub-request refused")

// loader makes the sub-requests of one page of one crawl.
type loader struct {
	web   Web
	crawl *crawlspec.Crawl
	root  *url.URL
	depth int
}

var _ render.Loader = (*loader)(nil)

// NewLoader returns the Loader of the sub-requests of page pg of crawl c: each one a GET (or
// HEAD) of an http(s) URL that the SSRF guard, the crawl's scope (from the page's root, at its
// depth) and robots.txt allow, sent with the crawl's User-Agent, headers and TLS fingerprint. A
// redirect is checked the same way at each hop. Anything else is refused with an error wrapping
// ErrRefused: a crawler changes nothing on the sites it reads, so it sends no POST.
func NewLoader(web Web, c *crawlspec.Crawl, pg message.Page) render.Loader {
	root, err := urlnorm.Normalize(pg.Root)
	if err != nil {
		root = nil // every sub-request is refused (check)
	}
	return &loader{web: web, crawl: c, root: root, depth: pg.Depth}
}

// Load makes req, or refuses it.
func (l *loader) Load(ctx context.Context, req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead && req.Method != "" {
		return nil, fmt.Errorf("%w: %s %s: only GET and HEAD are sent", ErrRefused, req.Method, urlnorm.Redact(req.URL.String()))
	}
	if l.web.HTTP == nil {
		return nil, fmt.Errorf("%w: no HTTP client", ErrRefused)
	}
	if err := l.check(ctx, req.URL); err != nil {
		return nil, err
	}
	ctx = l.crawlContext(ctx)
	resp, err := l.web.HTTP.GetFollowing(ctx, req.URL.String(), func(target *url.URL) error { return l.check(ctx, target) })
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", urlnorm.Redact(req.URL.String()), err)
	}
	h := resp.Header.Clone()
	h.Del("Content-Encoding") // the body is decoded
	h.Set("Content-Length", strconv.Itoa(len(resp.Body)))
	body := resp.Body
	if req.Method == http.MethodHead {
		body = nil
	}
	return &http.Response{Status: fmt.Sprintf("%d %s", resp.Status, http.StatusText(resp.Status)), StatusCode: resp.Status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: h, Body: io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)), Request: req}, nil
}

// check refuses a URL that the guard, the crawl's scope or robots.txt do not allow.
func (l *loader) check(ctx context.Context, raw *url.URL) error {
	if raw == nil {
		return fmt.Errorf("%w: no URL", ErrRefused)
	}
	u, err := urlnorm.Normalize(raw.String())
	if err != nil {
		return fmt.Errorf("%w: %v", ErrRefused, err)
	}
	if l.web.Guard != nil {
		if err := l.web.Guard.CheckURL(u); err != nil {
			return fmt.Errorf("%w: %v", ErrRefused, err)
		}
	}
	if l.root == nil {
		return fmt.Errorf("%w: the page has no scope root", ErrRefused)
	}
	now := time.Now
	if l.web.Now != nil {
		now = l.web.Now
	}
	if err := l.crawl.Rules.Check(l.root, u, l.depth, now()); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrRefused, urlnorm.Redact(u.String()), err)
	}
	if l.web.Robots == nil {
		return fmt.Errorf("%w: no robots.txt checker", ErrRefused)
	}
	d, err := l.web.Robots.Check(l.crawlContext(ctx), u)
	if err != nil {
		return fmt.Errorf("%w: robots.txt of %s: %v", ErrRefused, u.Host, err)
	}
	if !d.Allowed {
		return fmt.Errorf("%w: %s: robots.txt: %s", ErrRefused, urlnorm.Redact(u.String()), d.Reason)
	}
	return nil
}

// crawlContext is ctx with the crawl's User-Agent, headers and TLS fingerprint, as fetch sends
// them.
func (l *loader) crawlContext(ctx context.Context) context.Context {
	c := l.crawl
	if c.UserAgent != "" {
		ctx = robots.WithUserAgent(httpfetch.WithRequest(ctx, c.UserAgent, c.Header), c.UserAgent)
	}
	if c.Fingerprint != "" {
		ctx = httpfetch.WithFingerprint(ctx, c.Fingerprint)
	}
	return ctx
}
