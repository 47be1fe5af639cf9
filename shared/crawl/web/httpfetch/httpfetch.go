// Package httpfetch is the crawler's HTTP client for the hostile web. Every request is checked
// by a netguard.Guard (the URL, every redirect hop, and every dialled IP), every input is
// bounded (raw and decoded body bytes, header bytes, redirects) and every wait has a deadline
// (response headers, the gap between body reads, and the whole fetch). Failures come back as
// errclass errors; HTTP statuses do not: the caller classifies them with errclass.FromStatus.
package httpfetch

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/web/netguard"
)

// Defaults for the zero values of Options.
const (
	DefaultMaxBodyBytes    int64 = 10 << 20
	DefaultMaxDecodedBytes int64 = 20 << 20
	DefaultMaxHeaderBytes  int64 = 64 << 10
	DefaultHeaderTimeout         = 10 * time.Second
	DefaultIdleReadTimeout       = 10 * time.Second
	DefaultTotalTimeout          = 30 * time.Second
	// DefaultMinBodyRate and DefaultMinRateAfter cut off a body that comes in slower than 1 KiB/s
	// on average once 10 s have passed (as curl's --speed-limit and --speed-time do): a server
	// that trickles a byte every few seconds keeps clear of the idle timeout, and would otherwise
	// hold each try for the whole TotalTimeout.
	DefaultMinBodyRate         = 1024
	DefaultMinRateAfter        = 10 * time.Second
	DefaultMaxRedirects        = 5
	DefaultMaxIdleConnsPerHost = 16
)

// Fingerprints that Options.Fingerprint accepts.
const (
	FingerprintGo     = ""       // Go's own TLS stack, HTTP/2 when the server offers it
	FingerprintChrome = "chrome" // Chrome's ClientHello (ChromeHello), HTTP/2 when the server chooses it
)

// Options configure a Client. Zero values take the defaults above.
type Options struct {
	// UserAgent is sent with every request. It is required: crawlers say who they are.
	UserAgent string
	// Guard refuses non-public addresses. Nil means netguard.New(nil, nil): public addresses
	// on ports 80 and 443 only.
	Guard *netguard.Guard
	// MaxBodyBytes caps the body as received on the wire.
	MaxBodyBytes int64
	// MaxDecodedBytes caps the body after gzip, deflate or br decoding.
	MaxDecodedBytes int64
	// MaxHeaderBytes caps the response header block.
	MaxHeaderBytes int64
	// HeaderTimeout bounds the connect, the TLS handshake and the wait for response headers.
	HeaderTimeout time.Duration
	// IdleReadTimeout bounds the gap between two body reads (a trickling server is cut off).
	IdleReadTimeout time.Duration
	// TotalTimeout bounds the whole fetch, redirects and body included.
	TotalTimeout time.Duration
	// MinBodyRate (bytes a second) and MinRateAfter: a body read at a lower average rate than
	// MinBodyRate, once MinRateAfter has passed since its first read, is cut off (class timeout).
	MinBodyRate  int64
	MinRateAfter time.Duration
	// MaxRedirects is how many redirects are followed; 0 means the default, negative means none.
	MaxRedirects int
	// MaxIdleConnsPerHost is how many idle keep-alive connections are kept per host.
	MaxIdleConnsPerHost int
	// MaxInFlight is the most requests the client has in flight at once, redirects and body
	// included; a request past it waits for one to end (its context bounds the wait, its
	// timeouts start after it). 0: no bound. It lets a process keep more work in hand than it
	// fetches at once: `crawl run` gives fetch twice its concurrency in batches, so that one
	// batch's GETs go on while another stores its pages.
	MaxInFlight int
	// Fingerprint chooses the TLS ClientHello: FingerprintGo (default) or FingerprintChrome.
	Fingerprint string
	// Proxies, when set, carry every request: http://, https:// or socks5:// URLs, with their
	// credentials in the URL (never logged: errors name them redacted). The SSRF guard still
	// checks each target's addresses before the request goes to a proxy, and the proxy is asked
	// for a tunnel to a checked address, never to the name (an HTTP or SOCKS5 CONNECT, for
	// plain-http targets too); the proxies' own addresses are dialled unguarded, since the user
	// configured them. Not with FingerprintChrome.
	Proxies []string
	// ProxyRotation is RotatePerRequest (the default) or StickyPerHost.
	ProxyRotation string
	// ProxyFailures and ProxyCooldown tune the proxies' circuit breakers (0: the defaults).
	ProxyFailures int
	ProxyCooldown time.Duration
	// Resolver replaces the system resolver (tests point it at a fake DNS server).
	Resolver *net.Resolver
	// RootCAs replaces the system roots for certificate checks (tests trust their own server).
	RootCAs *x509.CertPool
}

// Client fetches pages. It shares one connection pool across hosts and is safe for concurrent use.
type Client struct {
	opts      Options
	guard     *netguard.Guard
	transport *http.Transport
	proxied   *proxyTransport  // the requests through Options.Proxies (nil: none)
	chrome    *chromeTransport // the requests with FingerprintChrome (Options or WithFingerprint)
	slots     chan struct{}    // one token per request in flight; nil: no bound
}

// Response is a fetched page. Non-2xx statuses are responses, not errors.
type Response struct {
	URL       string      // the final URL, after redirects
	Status    int         // the final HTTP status code
	Header    http.Header // the final response's headers, as received
	Body      []byte      // the body, decoded from gzip, deflate or br
	Truncated bool        // the body was cut at GetLimited's maxBody
	Redirects []string    // the URLs that answered with a redirect, in order, starting with the requested one
	FetchedAt time.Time   // when the request started
	Duration  time.Duration
	Request   http.Header // the header sent with the final request (the WARC request record's)
}

// New returns a Client. It fails on an empty UserAgent or an unknown Fingerprint.
func New(opts Options) (*Client, error) {
	if opts.UserAgent == "" {
		return nil, errors.New("httpfetch: a User-Agent is required")
	}
	if opts.MaxInFlight < 0 {
		return nil, fmt.Errorf("httpfetch: max in flight %d: must not be negative", opts.MaxInFlight)
	}
	if opts.Fingerprint != FingerprintGo && opts.Fingerprint != FingerprintChrome {
		return nil, fmt.Errorf("httpfetch: unknown TLS fingerprint %q (want %q or %q)",
			opts.Fingerprint, FingerprintGo, FingerprintChrome)
	}
	setDefaults(&opts)
	guard := opts.Guard
	if guard == nil {
		guard = netguard.New(nil, nil)
	}
	dialer := &net.Dialer{
		Timeout:   opts.HeaderTimeout,
		KeepAlive: 30 * time.Second,
		Resolver:  opts.Resolver,
		Control:   guard.Control,
	}
	tr := &http.Transport{
		Proxy:                  nil, // a proxy would dial on our behalf, past the guard
		DialContext:            dialer.DialContext,
		TLSClientConfig:        &tls.Config{RootCAs: opts.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    opts.HeaderTimeout,
		ResponseHeaderTimeout:  opts.HeaderTimeout,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: opts.MaxHeaderBytes,
		DisableCompression:     true, // decoded here, under our caps
		MaxIdleConns:           1024,
		MaxIdleConnsPerHost:    opts.MaxIdleConnsPerHost,
		IdleConnTimeout:        90 * time.Second,
		ForceAttemptHTTP2:      true,
	}
	c := &Client{opts: opts, guard: guard, transport: tr}
	c.chrome = newChromeTransport(tr.Clone(), dialer.DialContext, opts.RootCAs, opts.HeaderTimeout, opts.HeaderTimeout, opts.MaxHeaderBytes)
	if len(opts.Proxies) > 0 {
		if opts.Fingerprint == FingerprintChrome {
			return nil, errors.New("httpfetch: the chrome TLS fingerprint does not go through proxies yet: use one or the other")
		}
		pool, err := newProxyPool(opts.Proxies, opts.ProxyRotation, cmp.Or(opts.ProxyFailures, DefaultProxyFailures), opts.ProxyCooldown, time.Now)
		if err != nil {
			return nil, fmt.Errorf("httpfetch: %w", err)
		}
		plain := &net.Dialer{Timeout: opts.HeaderTimeout, KeepAlive: 30 * time.Second, Resolver: opts.Resolver}
		for _, s := range pool.proxies {
			s.transport = newProxyTransport(tr, &tunnelDialer{proxy: s, plain: plain, rootCAs: opts.RootCAs, timeout: opts.HeaderTimeout})
		}
		c.proxied = &proxyTransport{pool: pool, guard: guard, resolver: cmp.Or(opts.Resolver, net.DefaultResolver)}
	}
	if opts.MaxInFlight > 0 {
		c.slots = make(chan struct{}, opts.MaxInFlight)
	}
	return c, nil
}

func setDefaults(o *Options) {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.MaxDecodedBytes <= 0 {
		o.MaxDecodedBytes = DefaultMaxDecodedBytes
	}
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if o.HeaderTimeout <= 0 {
		o.HeaderTimeout = DefaultHeaderTimeout
	}
	if o.IdleReadTimeout <= 0 {
		o.IdleReadTimeout = DefaultIdleReadTimeout
	}
	if o.TotalTimeout <= 0 {
		o.TotalTimeout = DefaultTotalTimeout
	}
	if o.MinBodyRate <= 0 {
		o.MinBodyRate = DefaultMinBodyRate
	}
	if o.MinRateAfter <= 0 {
		o.MinRateAfter = DefaultMinRateAfter
	}
	switch {
	case o.MaxRedirects == 0:
		o.MaxRedirects = DefaultMaxRedirects
	case o.MaxRedirects < 0:
		o.MaxRedirects = 0
	}
	if o.MaxIdleConnsPerHost <= 0 {
		o.MaxIdleConnsPerHost = DefaultMaxIdleConnsPerHost
	}
}

// Close closes the idle connections of the pool.
func (c *Client) Close() {
	c.transport.CloseIdleConnections()
	c.chrome.CloseIdleConnections()
	if c.proxied != nil {
		for _, s := range c.proxied.pool.proxies {
			s.transport.CloseIdleConnections()
		}
	}
}

// Get fetches rawURL with the client's limits.
func (c *Client) Get(ctx context.Context, rawURL string) (*Response, error) {
	return c.GetLimited(ctx, rawURL, 0, -1)
}

// GetFollowing is Get that follows a redirect only where follow allows: each hop's target goes to
// follow after the guard, and an error from it stops the fetch with that error (keep its class:
// errclass.Scope for a target out of the crawl's scope, say).
func (c *Client) GetFollowing(ctx context.Context, rawURL string, follow func(target *url.URL) error) (*Response, error) {
	lim := c.limits()
	lim.follow = follow
	resp, err := c.get(ctx, rawURL, lim)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", rawURL, err)
	}
	return resp, nil
}

type requestKey struct{}

type requestOptions struct {
	userAgent  string
	header     http.Header
	hostHeader func(host string) http.Header
}

// ownHeaders are the request headers the client sets itself and WithRequest cannot replace.
var ownHeaders = map[string]bool{"Accept-Encoding": true, "Host": true, "Connection": true, "Content-Length": true,
	"Transfer-Encoding": true, "Te": true, "Upgrade": true, "Range": true}

// WithRequest has the requests made with ctx send userAgent (when not empty) instead of the
// client's, and the headers of header besides the client's own (those the client sets for its
// decoding and its connections stay the client's): the settings of one crawl's spec.
func WithRequest(ctx context.Context, userAgent string, header http.Header) context.Context {
	o, _ := ctx.Value(requestKey{}).(requestOptions)
	o.userAgent, o.header = userAgent, header
	return context.WithValue(ctx, requestKey{}, o)
}

// WithHostHeaders has the requests made with ctx send, to each host, the headers hostHeader gives
// it over those of WithRequest: on every hop of a redirect, a host's own, and none of the host
// before's (a spec's hosts section).
func WithHostHeaders(ctx context.Context, hostHeader func(host string) http.Header) context.Context {
	o, _ := ctx.Value(requestKey{}).(requestOptions)
	o.hostHeader = hostHeader
	return context.WithValue(ctx, requestKey{}, o)
}

// setHeaders sets on h the caller's headers for a request to host (WithRequest, WithHostHeaders),
// but those the client sets itself.
func setHeaders(ctx context.Context, h http.Header, host string) {
	o, ok := ctx.Value(requestKey{}).(requestOptions)
	if !ok {
		return
	}
	for _, hs := range []http.Header{o.header, hostHeaderOf(o, host)} {
		for k, vs := range hs {
			if !ownHeaders[http.CanonicalHeaderKey(k)] {
				h[http.CanonicalHeaderKey(k)] = vs
			}
		}
	}
	if o.userAgent != "" {
		h.Set("User-Agent", o.userAgent)
	}
}

// hopHeaders changes the headers of a redirect hop from before to host: before's own headers
// (WithHostHeaders) go, or fall back to the caller's of the same name, and host's come. The rest
// is as net/http copied it, which drops the credentials on a hop to another domain.
func hopHeaders(ctx context.Context, h http.Header, host, before string) {
	o, ok := ctx.Value(requestKey{}).(requestOptions)
	if !ok || o.hostHeader == nil {
		return
	}
	for k := range o.hostHeader(before) {
		h.Del(k)
		if vs, ok := o.header[http.CanonicalHeaderKey(k)]; ok && !ownHeaders[http.CanonicalHeaderKey(k)] {
			h[http.CanonicalHeaderKey(k)] = vs
		}
	}
	for k, vs := range o.hostHeader(host) {
		if !ownHeaders[http.CanonicalHeaderKey(k)] {
			h[http.CanonicalHeaderKey(k)] = vs
		}
	}
}

func hostHeaderOf(o requestOptions, host string) http.Header {
	if o.hostHeader == nil {
		return nil
	}
	return o.hostHeader(host)
}

func (c *Client) limits() limits {
	return limits{raw: c.opts.MaxBodyBytes, decoded: c.opts.MaxDecodedBytes, redirects: c.opts.MaxRedirects}
}

// GetLimited is Get for robots.txt (RFC 9309: parse at least 500 KiB, follow 5 redirects).
// The decoded body is cut at maxBody, and Response.Truncated set, instead of failing: a larger
// file is read up to the limit, not rejected. The raw body keeps the client's cap.
// maxBody <= 0 keeps the client's limits (and their errors); maxRedirects < 0 keeps the
// client's redirect limit, and 0 follows none.
func (c *Client) GetLimited(ctx context.Context, rawURL string, maxBody int64, maxRedirects int) (*Response, error) {
	lim := c.limits()
	if maxBody > 0 {
		lim.decoded, lim.truncate = maxBody, true
	}
	if maxRedirects >= 0 {
		lim.redirects = maxRedirects
	}
	resp, err := c.get(ctx, rawURL, lim)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", rawURL, err)
	}
	return resp, nil
}

type limits struct {
	raw, decoded int64
	truncate     bool // cut the decoded body at its cap instead of failing
	redirects    int
	follow       func(*url.URL) error // nil: follow every redirect the guard allows
	send         *Send                // nil: a GET
}

func (c *Client) get(ctx context.Context, rawURL string, lim limits) (*Response, error) {
	if c.slots != nil {
		select {
		case c.slots <- struct{}{}:
			defer func() {
				<-c.slots
				// The request waiting for this slot is now ready to run, but only on this P once
				// this goroutine stops (its caller goes on to store the page): yield, so that it
				// goes out now. A crawl at 50 ms a page kept 31.1 of 32 requests in flight
				// instead of 30.7 (docs/bench-history.md, round twelve).
				runtime.Gosched()
			}()
		case <-ctx.Done():
			return nil, errclass.New(errclass.Internal, fmt.Errorf("wait for a request slot: %w", ctx.Err())) // the caller gave up
		}
	}
	start := time.Now()
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, errclass.Errorf(errclass.Parse, "parse url: %v", err)
	}
	if err := c.guard.CheckURL(u); err != nil {
		return nil, err
	}
	ctx, cancelTotal := context.WithTimeout(ctx, c.opts.TotalTimeout)
	defer cancelTotal()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var redirects []string
	hc := &http.Client{
		Transport:     c.transportFor(ctx),
		CheckRedirect: c.checkRedirect(lim, &redirects),
		Jar:           jarOf(ctx),
	}
	req, err := c.newRequest(ctx, u, lim.send)
	if err != nil {
		return nil, err
	}

	idle := newIdleTimer(c.opts.IdleReadTimeout, cancel)
	idle.minRate, idle.after = c.opts.MinBodyRate, c.opts.MinRateAfter
	defer idle.stop()
	resp, err := hc.Do(req)
	if err != nil {
		return nil, classify(ctx, err, idle)
	}
	defer resp.Body.Close()
	body, truncated, err := readBody(ctx, resp, idle.wrap(resp.Body), lim)
	if err != nil {
		return nil, classify(ctx, err, idle)
	}
	return &Response{
		URL:       resp.Request.URL.String(),
		Status:    resp.StatusCode,
		Header:    resp.Header,
		Body:      body,
		Truncated: truncated,
		Redirects: redirects,
		FetchedAt: start,
		Duration:  time.Since(start),
		Request:   resp.Request.Header,
	}, nil
}

// checkRedirect is the redirect policy of one GET: at most lim.redirects, each to a URL the guard
// and lim.follow allow; it adds each URL redirected from to redirects.
func (c *Client) checkRedirect(lim limits, redirects *[]string) func(req *http.Request, via []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) > lim.redirects {
			return errclass.Errorf(errclass.Redirect, "more than %d redirects", lim.redirects)
		}
		if err := c.guard.CheckURL(req.URL); err != nil {
			return fmt.Errorf("redirect to %s: %w", req.URL.Redacted(), err)
		}
		if lim.follow != nil {
			if err := lim.follow(req.URL); err != nil {
				return fmt.Errorf("redirect to %s: %w", req.URL.Redacted(), err)
			}
		}
		if prev := via[len(via)-1].URL.Host; prev != req.URL.Host {
			hopHeaders(req.Context(), req.Header, req.URL.Host, prev)
		}
		*redirects = append(*redirects, via[len(via)-1].URL.String())
		return nil
	}
}

// newRequest is the GET of u with the crawler's headers, the caller's own from ctx (but those the
// client sets itself), and the conditional ones of a recrawl.
func (c *Client) newRequest(ctx context.Context, u *url.URL, send *Send) (*http.Request, error) {
	method, body := http.MethodGet, io.Reader(nil)
	if send != nil {
		method = send.Method
		if send.Body != nil {
			body = bytes.NewReader(send.Body)
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, errclass.Errorf(errclass.Parse, "build request: %v", err)
	}

	req.Header.Set("User-Agent", c.opts.UserAgent)
	req.Header.Set("Accept-Encoding", "gzip, deflate, br")
	req.Header.Set("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
	setHeaders(ctx, req.Header, u.Host)
	if send != nil {
		for k, vs := range send.Header {
			if !ownHeaders[http.CanonicalHeaderKey(k)] {
				req.Header[http.CanonicalHeaderKey(k)] = vs
			}
		}
		return req, nil // a login's: no conditional headers
	}
	setConditional(ctx, req.Header)
	return req, nil
}
