package httpfetch

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/web/netguard"
)

// Proxy rotations that Options.ProxyRotation accepts.
const (
	// RotatePerRequest sends each request through the next proxy in turn.
	RotatePerRequest = "request"
	// StickyPerHost sends all of a host's requests through one proxy while it is up.
	StickyPerHost = "host"
)

// Defaults of the proxies' circuit breakers.
const (
	// DefaultProxyFailures is how many failures in a row take a proxy out.
	DefaultProxyFailures = 3
	// DefaultProxyCooldown is how long a proxy stays out before one request probes it.
	DefaultProxyCooldown = 30 * time.Second
)

// proxyPool chooses the proxy of each request among the configured ones, and keeps a circuit
// breaker per proxy: failures in a row take it out for a cooldown, then one request probes it,
// and it is back in when that succeeds.
type proxyPool struct {
	proxies  []*proxyState
	sticky   bool
	failures int
	cooldown time.Duration
	now      func() time.Time
	next     atomic.Uint64
}

// proxyState is a proxy and its breaker.
type proxyState struct {
	url       *url.URL
	addr      string          // host:port, as the transport dials it
	transport *http.Transport // the requests through this proxy, each connection a tunnel (tunnel.go)

	mu        sync.Mutex
	fails     int
	openUntil time.Time // out until then (zero: in)
	probing   bool      // a probe is in flight: no other request goes through it
}

func newProxyPool(raw []string, rotation string, failures int, cooldown time.Duration, now func() time.Time) (*proxyPool, error) {
	if rotation != RotatePerRequest && rotation != StickyPerHost && rotation != "" {
		return nil, fmt.Errorf("proxy rotation %q: want %s or %s", rotation, RotatePerRequest, StickyPerHost)
	}
	p := &proxyPool{sticky: rotation == StickyPerHost, failures: max(failures, 1), cooldown: cooldown, now: now}
	if p.cooldown <= 0 {
		p.cooldown = DefaultProxyCooldown
	}
	for _, r := range raw {
		u, err := ParseProxy(r)
		if err != nil {
			return nil, err
		}
		port := u.Port()
		p.proxies = append(p.proxies, &proxyState{url: u, addr: net.JoinHostPort(u.Hostname(), port)})
	}
	return p, nil
}

// pick returns the proxy for a request to host: the next one in turn, or the host's own (the
// pool's rotation is StickyPerHost, or sticky asks for it), skipping those that are out. A proxy
// whose cooldown is over takes this request as its probe.
func (p *proxyPool) pick(host string, sticky bool) (*proxyState, error) {
	n := len(p.proxies)
	start := int(p.next.Add(1) % uint64(n))
	if p.sticky || sticky {
		h := fnv.New32a()
		h.Write([]byte(host))
		start = int(h.Sum32() % uint32(n))
	}
	now := p.now()
	for i := range n {
		s := p.proxies[(start+i)%n]
		if s.take(now) {
			return s, nil
		}
	}
	return nil, proxiesOut{errclass.Errorf(errclass.Connect, "every proxy is out after failing %d times in a row (each is probed again %v after it went out)",
		p.failures, p.cooldown)}
}

type stickyKey struct{}

// WithStickyProxy has the requests made with ctx to each host for which sticky says so go
// through the host's own proxy while it is up, whatever the client's rotation: the hosts whose
// requests keep one identity (a spec's hosts entry with sticky_proxy), such as those that carry
// the host's cookies.
func WithStickyProxy(ctx context.Context, sticky func(host string) bool) context.Context {
	return context.WithValue(ctx, stickyKey{}, sticky)
}

func stickyProxy(ctx context.Context, host string) bool {
	f, ok := ctx.Value(stickyKey{}).(func(string) bool)
	return ok && f(host)
}

// proxiesOut is pick's error when every proxy is out.
type proxiesOut struct{ error }

func (e proxiesOut) Unwrap() error { return e.error }

// ViaProxy tells whether err is a request's failure on its way through a proxy, or the pool's
// refusal when every proxy is out: the proxy's trouble as much as the target's, which the proxy's
// own breaker counts, so that a host's circuit (crawlstate.Hosts.HostFailed) leaves it out.
func ViaProxy(err error) bool {
	var pe *proxyError
	var out proxiesOut
	return errors.As(err, &pe) || errors.As(err, &out)
}

// take reports whether the proxy may carry a request now, and marks it probing when this
// request is the probe of a proxy that was out.
func (s *proxyState) take(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.openUntil.IsZero():
		return true
	case s.probing || now.Before(s.openUntil):
		return false
	}
	s.probing = true
	return true
}

// report records how a request through the proxy went.
func (p *proxyPool) report(s *proxyState, failed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !failed {
		s.fails, s.openUntil, s.probing = 0, time.Time{}, false
		return
	}
	s.fails++
	if s.probing || s.fails >= p.failures {
		s.openUntil = p.now().Add(p.cooldown)
	}
	s.probing = false
}

// proxyTransport sends every request through a proxy of the pool. Before it does, it resolves
// the target's host and refuses it unless the SSRF guard allows every address (the proxy would
// reach it on the crawler's behalf); then the proxy's transport tunnels to one of those
// addresses, never to the name (tunnel.go). Every redirect hop comes through here again.
type proxyTransport struct {
	pool     *proxyPool
	guard    *netguard.Guard
	resolver *net.Resolver
}

func (t *proxyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	addrs, err := t.checkTarget(req.Context(), req.URL)
	if err != nil {
		return nil, err
	}
	s, err := t.pool.pick(req.URL.Host, stickyProxy(req.Context(), req.URL.Host))
	if err != nil {
		return nil, err
	}
	ctx := context.WithValue(req.Context(), targetKey{}, checkedTarget{host: req.URL.Hostname(), addrs: addrs})
	resp, err := s.transport.RoundTrip(req.WithContext(ctx))
	switch {
	case err != nil && req.Context().Err() != nil:
		// The caller gave up or its deadline passed: not the proxy's fault.
		t.pool.report(s, errors.Is(req.Context().Err(), context.DeadlineExceeded))
	case err != nil:
		t.pool.report(s, true)
		return nil, &proxyError{proxy: s.url.Redacted(), err: err}
	case resp.StatusCode == http.StatusProxyAuthRequired:
		t.pool.report(s, true)
	default:
		t.pool.report(s, false)
	}
	return resp, err
}

// proxyError names the proxy (without its password) a request failed through, and keeps the
// error's timeout, which net/url's error reads without unwrapping.
type proxyError struct {
	proxy string
	err   error
}

func (e *proxyError) Error() string { return fmt.Sprintf("through proxy %s: %v", e.proxy, e.err) }
func (e *proxyError) Unwrap() error { return e.err }
func (e *proxyError) Timeout() bool {
	var ne net.Error
	return errors.As(e.err, &ne) && ne.Timeout()
}

// checkTarget resolves u's host and checks every address with the guard; it returns them, for
// the tunnel to go to one of them and nowhere else.
func (t *proxyTransport) checkTarget(ctx context.Context, u *url.URL) ([]netip.Addr, error) {
	if err := t.guard.CheckURL(u); err != nil {
		return nil, err
	}
	port, err := netip.ParseAddrPort(net.JoinHostPort("0.0.0.0", portOf(u)))
	if err != nil {
		return nil, errclass.Errorf(errclass.SSRF, "port of %s: %v", u.Redacted(), err)
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{ip}, t.guard.CheckAddr(netip.AddrPortFrom(ip, port.Port()))
	}
	ips, err := t.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, classify(ctx, err, &idleTimer{})
	}
	if len(ips) == 0 {
		return nil, errclass.Errorf(errclass.DNS, "%s has no address", host)
	}
	for i, ip := range ips {
		ips[i] = ip.Unmap()
		if err := t.guard.CheckAddr(netip.AddrPortFrom(ips[i], port.Port())); err != nil {
			return nil, fmt.Errorf("%s resolves to %s: %w", host, ip, err)
		}
	}
	return ips, nil
}

func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "https" {
		return "443"
	}
	return "80"
}
