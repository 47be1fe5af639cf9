package httpfetch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	utls "github.com/refraction-networking/utls"
	"golang.org/x/net/http2"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
)

// ChromeHello is the ClientHello that FingerprintChrome sends: Chrome 133's, ALPN included
// ("h2", "http/1.1"), as utls has it.
var ChromeHello = utls.HelloChrome_133

// ChromeUserAgent is the User-Agent of the Chrome whose ClientHello FingerprintChrome sends. A
// crawl that asks for a browser's User-Agent with that fingerprint gets this one, so that the
// two agree (see UserAgentFor).
const ChromeUserAgent = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/133.0.0.0 Safari/537.36"

// UserAgentBrowser is the User-Agent setting that asks for the browser's own User-Agent: the one
// that matches the TLS fingerprint (ChromeUserAgent for FingerprintChrome).
const UserAgentBrowser = "browser"

// UserAgentFor is the User-Agent sent for the setting ua under fingerprint fp: ua itself, or,
// for UserAgentBrowser, the browser's own. It fails for UserAgentBrowser without a browser
// fingerprint, and for a User-Agent that names another Chrome than the ClientHello's.
func UserAgentFor(ua, fp string) (string, error) {
	switch {
	case ua == UserAgentBrowser && fp == FingerprintChrome:
		return ChromeUserAgent, nil
	case ua == UserAgentBrowser:
		return "", fmt.Errorf("user agent %q: only with the TLS fingerprint %q, whose browser it names", ua, FingerprintChrome)
	case fp == FingerprintChrome && claimsOtherChrome(ua):
		return "", fmt.Errorf("user agent %q names another Chrome than the TLS fingerprint's (Chrome %s): set %q for a matching one, or your crawler's own",
			ua, ChromeHello.Version, UserAgentBrowser)
	}
	return ua, nil
}

// claimsOtherChrome reports whether ua says it is a Chrome of another major version than
// ChromeHello's.
func claimsOtherChrome(ua string) bool {
	_, v, ok := strings.Cut(ua, "Chrome/")
	if !ok {
		return false
	}
	major, _, _ := strings.Cut(v, ".")
	return major != ChromeHello.Version
}

// chromeTransport sends https requests over connections that open with Chrome's ClientHello
// (ChromeHello), ALPN included, and speaks the protocol the server chose: HTTP/2 through
// golang.org/x/net/http2 (net/http runs HTTP/2 only over its own *tls.Conn), or HTTP/1.1 through
// net/http. What the server chose is remembered per origin; the connection dialled to learn it is
// the first one the chosen transport takes. Plain http goes through net/http as it would
// without a fingerprint. Every TCP dial goes through the guarded dialer, so the SSRF check still
// runs on every IP.
type chromeTransport struct {
	dial             func(ctx context.Context, network, addr string) (net.Conn, error)
	roots            *x509.CertPool
	handshakeTimeout time.Duration
	headerTimeout    time.Duration
	h1               *http.Transport
	h2               *http2.Transport

	mu     sync.Mutex
	protos map[string]string    // origin address -> the protocol its last handshake chose
	spare  map[string]spareConn // origin address -> a connection dialled to learn its protocol
}

// spareConn is a connection dialled to learn an origin's protocol, not yet taken by a transport.
type spareConn struct {
	conn  *utls.UConn
	proto string
	at    time.Time
}

// spareFor is how long a spare connection is offered before it is closed instead.
const spareFor = 10 * time.Second

const (
	protoH2 = "h2"
	protoH1 = "http/1.1"
)

func newChromeTransport(h1 *http.Transport, dial func(ctx context.Context, network, addr string) (net.Conn, error),
	roots *x509.CertPool, handshakeTimeout, headerTimeout time.Duration, maxHeaderBytes int64) *chromeTransport {
	t := &chromeTransport{dial: dial, roots: roots, handshakeTimeout: handshakeTimeout, headerTimeout: headerTimeout,
		h1: h1, protos: map[string]string{}, spare: map[string]spareConn{}}
	h1.DialTLSContext = t.dialFor(protoH1)
	h1.ForceAttemptHTTP2 = false
	t.h2 = &http2.Transport{
		DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
			return t.dialFor(protoH2)(ctx, network, addr)
		},
		DisableCompression: true, // decoded by the client, under its caps
		MaxHeaderListSize:  uint32(min(maxHeaderBytes, 1<<31)),
		ReadIdleTimeout:    30 * time.Second,
		PingTimeout:        15 * time.Second,
		IdleConnTimeout:    90 * time.Second,
	}
	return t
}

// RoundTrip sends req over HTTP/2 or HTTP/1.1, as its origin's server chose.
func (t *chromeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" {
		return t.h1.RoundTrip(req)
	}
	addr := originAddr(req)
	t.mu.Lock()
	proto, known := t.protos[addr]
	t.mu.Unlock()
	if !known {
		conn, err := t.handshake(req.Context(), "tcp", addr)
		if err != nil {
			return nil, err
		}
		proto = negotiated(conn)
		t.keepSpare(addr, proto, conn)
	}
	if proto == protoH2 {
		return t.roundTripH2(req)
	}
	return t.h1.RoundTrip(req)
}

// roundTripH2 is the HTTP/2 round trip, bounded by the header timeout as net/http's is.
func (t *chromeTransport) roundTripH2(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	timer := time.AfterFunc(t.headerTimeout, cancel)
	resp, err := t.h2.RoundTrip(req.WithContext(ctx))
	late := !timer.Stop()
	if err != nil {
		cancel()
		if late && req.Context().Err() == nil {
			return nil, errclass.Errorf(errclass.Timeout, "no response headers within %v: %v", t.headerTimeout, err)
		}
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// cancelOnClose releases a request's context when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// CloseIdleConnections closes both transports' idle connections and the spare ones.
func (t *chromeTransport) CloseIdleConnections() {
	t.h1.CloseIdleConnections()
	t.h2.CloseIdleConnections()
	t.mu.Lock()
	defer t.mu.Unlock()
	for addr, s := range t.spare {
		s.conn.Close()
		delete(t.spare, addr)
	}
}

// dialFor is the TLS dial of the transport that speaks proto: it takes the origin's spare
// connection if one is waiting for proto, and dials otherwise. A server that chose another
// protocol than the one it chose before has its new choice remembered, and the dial fails (class
// connect, so the request is tried again).
func (t *chromeTransport) dialFor(proto string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if c := t.takeSpare(addr, proto); c != nil {
			return c, nil
		}
		conn, err := t.handshake(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if got := negotiated(conn); got != proto {
			t.mu.Lock()
			t.protos[addr] = got
			t.mu.Unlock()
			conn.Close()
			return nil, errclass.Errorf(errclass.Connect, "%s now speaks %s, not %s", addr, got, proto)
		}
		return conn, nil
	}
}

// handshake dials addr through the guarded dialer and opens TLS with Chrome's ClientHello.
func (t *chromeTransport) handshake(ctx context.Context, network, addr string) (*utls.UConn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("chrome tls dial %s: %w", addr, err)
	}
	raw, err := t.dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	conn := utls.UClient(raw, &utls.Config{ServerName: host, RootCAs: t.roots}, ChromeHello)
	hctx, cancel := context.WithTimeout(ctx, t.handshakeTimeout)
	defer cancel()
	if err := conn.HandshakeContext(hctx); err != nil {
		raw.Close()
		return nil, fmt.Errorf("chrome tls handshake with %s: %w", addr, err)
	}
	return conn, nil
}

// keepSpare remembers the origin's protocol and offers conn to the next dial for it; a spare
// already waiting for the origin is kept and conn closed.
func (t *chromeTransport) keepSpare(addr, proto string, conn *utls.UConn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.protos[addr] = proto
	if _, ok := t.spare[addr]; ok {
		conn.Close()
		return
	}
	t.spare[addr] = spareConn{conn: conn, proto: proto, at: time.Now()}
}

// takeSpare takes the origin's spare connection if it speaks proto and is fresh.
func (t *chromeTransport) takeSpare(addr, proto string) net.Conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.spare[addr]
	if !ok {
		return nil
	}
	delete(t.spare, addr)
	if s.proto != proto || time.Since(s.at) > spareFor {
		s.conn.Close()
		return nil
	}
	return s.conn
}

// negotiated is the protocol the server chose with ALPN (HTTP/1.1 when it chose none).
func negotiated(c *utls.UConn) string {
	if p := c.ConnectionState().NegotiatedProtocol; p == protoH2 {
		return protoH2
	}
	return protoH1
}

// originAddr is the request's origin as the transports dial it: host and port, 443 by default.
func originAddr(req *http.Request) string {
	port := req.URL.Port()
	if port == "" {
		port = "443"
	}
	return net.JoinHostPort(req.URL.Hostname(), port)
}

type fingerprintKey struct{}

// WithFingerprint has the requests made with ctx open their TLS connections with fingerprint fp
// (FingerprintGo or FingerprintChrome) instead of the client's: a crawl spec's setting. An unknown
// fingerprint is refused where the setting is read (ValidFingerprint); here it keeps the client's.
func WithFingerprint(ctx context.Context, fp string) context.Context {
	return context.WithValue(ctx, fingerprintKey{}, fp)
}

// ValidFingerprint reports whether fp is a fingerprint the client knows.
func ValidFingerprint(fp string) bool { return fp == FingerprintGo || fp == FingerprintChrome }

// transportFor is the transport of the fingerprint that ctx or the client's options ask for.
func (c *Client) transportFor(ctx context.Context) http.RoundTripper {
	fp := c.opts.Fingerprint
	if v, ok := ctx.Value(fingerprintKey{}).(string); ok && ValidFingerprint(v) {
		fp = v
	}
	switch {
	case fp == FingerprintChrome && c.proxied != nil:
		return refuse{errclass.Errorf(errclass.Internal, "the chrome TLS fingerprint does not go through proxies yet")}
	case fp == FingerprintChrome:
		return c.chrome
	case c.proxied != nil:
		return c.proxied
	}
	return c.transport
}

// refuse is a RoundTripper that sends nothing and fails with err.
type refuse struct{ err error }

func (r refuse) RoundTrip(*http.Request) (*http.Response, error) { return nil, r.err }
