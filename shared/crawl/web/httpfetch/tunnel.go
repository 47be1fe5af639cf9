package httpfetch

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"time"

	"golang.org/x/net/proxy"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
)

// A request through a proxy goes to the address the SSRF guard checked, never to a name the proxy
// would resolve again: proxyTransport resolves the target's host and checks every address, and
// the proxy's own transport then opens a tunnel to that address (an HTTP CONNECT to ip:port, or
// a SOCKS5 CONNECT to the IP) and speaks to the target through it: TLS with the host's name as
// SNI and for the certificate check, and the Host header the host's name. So a name that
// resolves to a public address for the check and to a private one a moment later (DNS rebinding)
// cannot lead the proxy into its own network. Plain-http targets go through a CONNECT tunnel too:
// a proxy that refuses CONNECT to port 80 (squid's default SSL_ports rule does) cannot carry them.

type targetKey struct{}

// checkedTarget is what proxyTransport checked for a request: its host, and the addresses the
// guard allowed, in the resolver's order.
type checkedTarget struct {
	host  string
	addrs []netip.Addr
}

// tunnelDialer opens connections to checked addresses through one proxy.
type tunnelDialer struct {
	proxy   *proxyState
	plain   *net.Dialer // to the proxy itself: configured by the user, so not guarded
	rootCAs *x509.CertPool
	timeout time.Duration
}

// newProxyTransport is the transport of the requests through s: base's settings, with every
// connection a tunnel through s to the address proxyTransport checked.
func newProxyTransport(base *http.Transport, d *tunnelDialer) *http.Transport {
	tr := base.Clone()
	tr.Proxy = nil
	tr.DialContext = d.dial
	return tr
}

// dial opens a tunnel through the proxy to addr (host:port, as the transport asks for it), to
// the first of the host's checked addresses that the proxy connects to.
func (d *tunnelDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, errclass.Errorf(errclass.Internal, "dial %s: %v", addr, err)
	}
	ct, ok := ctx.Value(targetKey{}).(checkedTarget)
	if !ok || ct.host != host || len(ct.addrs) == 0 {
		// Never dial a name the guard did not check: the proxy would resolve it itself.
		return nil, errclass.Errorf(errclass.Internal, "dial %s through a proxy: its addresses were not checked", addr)
	}
	p, err := netip.ParseAddrPort(net.JoinHostPort("0.0.0.0", port))
	if err != nil {
		return nil, errclass.Errorf(errclass.Internal, "dial %s: %v", addr, err)
	}
	var errs []error
	for _, ip := range ct.addrs {
		c, err := d.tunnel(ctx, netip.AddrPortFrom(ip, p.Port()))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		var refused *connectRefused
		if !errors.As(err, &refused) || refused.code == http.StatusProxyAuthRequired {
			break // the proxy itself failed: another address would not help
		}
	}
	return nil, errors.Join(errs...)
}

// connectRefused is a proxy's answer other than 200 to a CONNECT.
type connectRefused struct {
	target netip.AddrPort
	code   int
	status string
}

func (e *connectRefused) Error() string {
	return fmt.Sprintf("the proxy answered %q to CONNECT %s", e.status, e.target)
}

// tunnel opens a connection to target through the proxy.
func (d *tunnelDialer) tunnel(ctx context.Context, target netip.AddrPort) (net.Conn, error) {
	u := d.proxy.url
	if u.Scheme == "socks5" {
		var auth *proxy.Auth
		if u.User != nil {
			pw, _ := u.User.Password()
			auth = &proxy.Auth{User: u.User.Username(), Password: pw}
		}
		s, err := proxy.SOCKS5("tcp", d.proxy.addr, auth, d.plain)
		if err != nil {
			return nil, err
		}
		return s.(proxy.ContextDialer).DialContext(ctx, "tcp", target.String())
	}
	conn, err := d.plain.DialContext(ctx, "tcp", d.proxy.addr)
	if err != nil {
		return nil, err
	}
	if u.Scheme == "https" {
		tc := tls.Client(conn, &tls.Config{ServerName: u.Hostname(), RootCAs: d.rootCAs, MinVersion: tls.VersionTLS12})
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, err
		}
		conn = tc
	}
	c, err := connect(ctx, conn, u, target, d.timeout)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return c, nil
}

// connect asks the proxy on conn for a tunnel to target, with the proxy's credentials, and waits
// at most timeout for its answer.
func connect(ctx context.Context, conn net.Conn, u *url.URL, target netip.AddrPort, timeout time.Duration) (net.Conn, error) {
	dl := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(dl) {
		dl = d
	}
	conn.SetDeadline(dl)
	defer conn.SetDeadline(time.Time{})
	req := &http.Request{Method: http.MethodConnect, URL: &url.URL{Opaque: target.String()}, Host: target.String(), Header: http.Header{}}
	if u.User != nil {
		pw, _ := u.User.Password()
		req.Header.Set("Proxy-Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pw)))
	}
	if err := req.Write(conn); err != nil {
		return nil, err
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, &connectRefused{target: target, code: resp.StatusCode, status: resp.Status}
	}
	if br.Buffered() > 0 {
		return &bufferedConn{Conn: conn, r: br}, nil
	}
	return conn, nil
}

// bufferedConn reads what the CONNECT's reader holds before the connection's own bytes.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
