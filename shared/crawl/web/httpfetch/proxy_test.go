package httpfetch

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/testkit/tunnelproxy"
)

// testProxy is a forward proxy on loopback (package tunnelproxy): it counts the plain-http
// requests it carried and the Proxy-Authorization it saw, and can be made slow.
type testProxy struct {
	*tunnelproxy.Proxy
	srv *httptest.Server
}

func newTestProxy(t *testing.T, delay time.Duration) *testProxy {
	t.Helper()
	p := tunnelproxy.New(t, tunnelproxy.Options{Delay: delay})
	return &testProxy{Proxy: p, srv: p.Server}
}

// listen serves each connection to a new loopback listener with serve, and returns its address.
func listen(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serve(c)
		}
	}()
	return ln.Addr().String()
}

// deadProxy is a proxy address that accepts connections and closes them at once; it counts them.
func deadProxy(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	addr := listen(t, func(c net.Conn) {
		n.Add(1)
		c.Close()
	})
	return "http://" + addr, &n
}

func target(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "page %s for %s", r.URL.Path, r.UserAgent())
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Per request, the proxies take turns; the target sees the client's User-Agent through them.
func TestProxyRotationPerRequest(t *testing.T) {
	a, b := newTestProxy(t, 0), newTestProxy(t, 0)
	site := target(t)
	c := newClient(t, Options{Proxies: []string{a.srv.URL, b.srv.URL}})
	for i := range 6 {
		resp, err := c.Get(context.Background(), fmt.Sprintf("%s/%d", site.URL, i))
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("page /%d for %s", i, testUA); string(resp.Body) != want {
			t.Errorf("body %q, want %q", resp.Body, want)
		}
	}
	if a.CarriedRequests() != 3 || b.CarriedRequests() != 3 {
		t.Errorf("the proxies carried %d and %d requests, want 3 each", a.CarriedRequests(), b.CarriedRequests())
	}
}

// Sticky per host: all of a host's requests go through one proxy.
func TestProxyStickyPerHost(t *testing.T) {
	a, b := newTestProxy(t, 0), newTestProxy(t, 0)
	site := target(t)
	c := newClient(t, Options{Proxies: []string{a.srv.URL, b.srv.URL}, ProxyRotation: StickyPerHost})
	for i := range 5 {
		if _, err := c.Get(context.Background(), fmt.Sprintf("%s/%d", site.URL, i)); err != nil {
			t.Fatal(err)
		}
	}
	if got := []int64{a.CarriedRequests(), b.CarriedRequests()}; !(got[0] == 5 && got[1] == 0 || got[0] == 0 && got[1] == 5) {
		t.Errorf("the proxies carried %v of one host's 5 requests, want all through one", got)
	}
}

// A host that asks for it keeps one proxy under per-request rotation, and the other hosts'
// requests still take turns.
func TestProxyStickyForTheHostsThatAskForIt(t *testing.T) {
	a, b := newTestProxy(t, 0), newTestProxy(t, 0)
	sticky, other := target(t), target(t)
	c := newClient(t, Options{Proxies: []string{a.srv.URL, b.srv.URL}, ProxyRotation: RotatePerRequest})
	stickyHost := strings.TrimPrefix(sticky.URL, "http://")
	ctx := WithStickyProxy(context.Background(), func(host string) bool { return host == stickyHost })
	for i := range 5 {
		if _, err := c.Get(ctx, fmt.Sprintf("%s/%d", sticky.URL, i)); err != nil {
			t.Fatal(err)
		}
	}
	if got := []int64{a.CarriedRequests(), b.CarriedRequests()}; !(got[0] == 5 && got[1] == 0 || got[0] == 0 && got[1] == 5) {
		t.Errorf("the proxies carried %v of the sticky host's 5 requests, want all through one", got)
	}
	before := []int64{a.CarriedRequests(), b.CarriedRequests()}
	for i := range 4 {
		if _, err := c.Get(ctx, fmt.Sprintf("%s/%d", other.URL, i)); err != nil {
			t.Fatal(err)
		}
	}
	if da, db := a.CarriedRequests()-before[0], b.CarriedRequests()-before[1]; da != 2 || db != 2 {
		t.Errorf("the proxies carried %d and %d of another host's 4 requests, want 2 each (in turn)", da, db)
	}
}

// A failing proxy is taken out after ProxyFailures failures in a row and gets no request while
// it is out; after the cooldown one request probes it, and when the probe succeeds it is back in.
func TestProxyBreakerOpensAndCloses(t *testing.T) {
	good := newTestProxy(t, 0)
	bad, dials := deadProxy(t)
	site := target(t)
	c := newClient(t, Options{Proxies: []string{bad, good.srv.URL}, ProxyFailures: 2, ProxyCooldown: time.Minute})
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	c.proxied.pool.now = func() time.Time { return now }
	failed := 0
	for i := range 8 {
		if _, err := c.Get(context.Background(), fmt.Sprintf("%s/%d", site.URL, i)); err != nil {
			failed++
			wantClass(t, err, errclass.Connect)
		}
	}
	// The bad proxy's turns: requests 1 and 3 (2 failures open it); the rest go through the good one.
	if failed != 2 || good.CarriedRequests() != 6 {
		t.Errorf("%d requests failed and the good proxy carried %d; want 2 failures, 6 carried", failed, good.CarriedRequests())
	}
	before := dials.Load()
	if before < 2 {
		t.Errorf("the bad proxy saw %d connections, want its 2 failures at least", before)
	}

	// The cooldown is over, and the proxy is back to health: the probe finds it, and it is in again.
	now = now.Add(time.Minute)
	healed := newTestProxy(t, 0)
	c.proxied.pool.proxies[0].url = mustParseProxy(t, healed.srv.URL)
	c.proxied.pool.proxies[0].addr = strings.TrimPrefix(healed.srv.URL, "http://")
	for i := range 4 {
		if _, err := c.Get(context.Background(), fmt.Sprintf("%s/again/%d", site.URL, i)); err != nil {
			t.Fatalf("after the cooldown: %v", err)
		}
	}
	if healed.CarriedRequests() != 2 || dials.Load() != before {
		t.Errorf("after the cooldown the probed proxy carried %d of 4 requests, want 2 (in again, taking turns)", healed.CarriedRequests())
	}
}

// A proxy that does not answer within the header timeout fails the request as a timeout.
func TestProxySlow(t *testing.T) {
	slow := newTestProxy(t, 2*time.Second)
	site := target(t)
	c := newClient(t, Options{Proxies: []string{slow.srv.URL}, HeaderTimeout: 200 * time.Millisecond})
	_, err := c.Get(context.Background(), site.URL)
	wantClass(t, err, errclass.Timeout)
}

// The SSRF guard still checks the target behind the proxy: a name that resolves to 127.0.0.2,
// which the test guard refuses (it allows 127.0.0.1 alone), on a port the guard leaves to the
// dial (an allow-list makes any port pass CheckURL): only the proxy transport's check of the
// target's addresses refuses it. The proxy (itself on loopback, trusted because it was
// configured) is asked for nothing.
func TestProxyKeepsTheGuardOnTheTarget(t *testing.T) {
	p := newTestProxy(t, 0)
	resolver := fakeDNS(t, map[string]netip.Addr{"private.test": netip.MustParseAddr("127.0.0.2")})
	c := newClient(t, Options{Proxies: []string{p.srv.URL}, Resolver: resolver})
	for _, u := range []string{"http://private.test:8080/", "https://private.test/"} {
		_, err := c.Get(context.Background(), u)
		wantClass(t, err, errclass.SSRF)
	}
	if asked := p.Asked(); len(asked) != 0 || p.CarriedRequests() != 0 {
		t.Errorf("the proxy was asked for %v and carried %d requests to a refused target", asked, p.CarriedRequests())
	}
}

// rebindSite serves on 127.0.0.1 and, on the same port, a refused server on 127.0.0.2 that
// counts the connections it gets (none may come); its handler records the Host and SNI it saw.
type rebindSite struct {
	port        string
	denied      *atomic.Int64
	mu          sync.Mutex
	hosts, snis []string
}

func newRebindSite(t *testing.T, tlsSite bool) (*rebindSite, *httptest.Server) {
	t.Helper()
	rs := &rebindSite{denied: &atomic.Int64{}}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rs.mu.Lock()
		rs.hosts = append(rs.hosts, r.Host)
		if r.TLS != nil {
			rs.snis = append(rs.snis, r.TLS.ServerName)
		}
		rs.mu.Unlock()
		fmt.Fprint(w, "the public page")
	}))
	if tlsSite {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	_, rs.port, _ = net.SplitHostPort(srv.Listener.Addr().String())
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.2", rs.port))
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.2:%s: %v", rs.port, err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			rs.denied.Add(1)
			c.Close()
		}
	}()
	return rs, srv
}

// A rebinding name (its name server answers an allowed address, 127.0.0.1, the first time, and a
// refused one, 127.0.0.2, after) cannot lead a proxy to the refused address: the crawler checks
// the first answer and asks the proxy for a tunnel to that address, never to the name, so the
// proxy, which resolves names with the same name server, never looks the name up. Over https the
// name is the SNI and the Host; the certificate is checked for it.
func TestProxyConnectsToTheCheckedAddress(t *testing.T) {
	for _, tt := range []struct {
		name, host string
		tls        bool
	}{
		{"http", "rebind.test", false},
		{"https", "example.com", true}, // httptest's certificate is for example.com
	} {
		t.Run(tt.name, func(t *testing.T) {
			site, srv := newRebindSite(t, tt.tls)
			resolver := rebindingDNS(t, tt.host, netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2"))
			p := tunnelproxy.New(t, tunnelproxy.Options{Resolver: resolver})
			opts := Options{Proxies: []string{p.URL()}, Resolver: resolver}
			if tt.tls {
				opts.RootCAs = x509.NewCertPool()
				opts.RootCAs.AddCert(srv.Certificate())
			}
			c := newClient(t, opts)
			scheme := map[bool]string{false: "http", true: "https"}[tt.tls]
			resp, err := c.Get(context.Background(), scheme+"://"+tt.host+":"+site.port+"/")
			if err != nil {
				t.Fatal(err)
			}
			if string(resp.Body) != "the public page" {
				t.Errorf("body %q, want the public page", resp.Body)
			}
			want := "127.0.0.1:" + site.port
			if asked, dialled := p.Asked(), p.Dialled(); len(asked) != 1 || asked[0] != want || len(dialled) != 1 || dialled[0] != want {
				t.Errorf("the proxy was asked for %v and connected to %v; want %s, the checked address, once", asked, dialled, want)
			}
			if n := site.denied.Load(); n != 0 {
				t.Errorf("the refused address 127.0.0.2 got %d connections", n)
			}
			site.mu.Lock()
			defer site.mu.Unlock()
			if len(site.hosts) != 1 || site.hosts[0] != tt.host+":"+site.port {
				t.Errorf("the site saw Host %v, want %s:%s", site.hosts, tt.host, site.port)
			}
			if tt.tls && (len(site.snis) != 1 || site.snis[0] != tt.host) {
				t.Errorf("the site saw SNI %v, want %s", site.snis, tt.host)
			}
		})
	}
}

// Through a SOCKS5 proxy too, the proxy is asked for the checked IP, not the name.
func TestSOCKSProxyConnectsToTheCheckedAddress(t *testing.T) {
	site, _ := newRebindSite(t, false)
	resolver := rebindingDNS(t, "rebind.test", netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2"))
	socks, carried, asked := socks5Proxy(t)
	c := newClient(t, Options{Proxies: []string{socks}, Resolver: resolver})
	if _, err := c.Get(context.Background(), "http://rebind.test:"+site.port+"/"); err != nil {
		t.Fatal(err)
	}
	if got := asked(); carried.Load() != 1 || len(got) != 1 || got[0] != "127.0.0.1:"+site.port {
		t.Errorf("the SOCKS proxy carried %d connections, asked for %v; want one, to 127.0.0.1:%s", carried.Load(), got, site.port)
	}
	if site.denied.Load() != 0 {
		t.Errorf("the refused address got %d connections", site.denied.Load())
	}
}

// A proxy's credentials go to the proxy, and into no error.
func TestProxyCredentialsAreSentAndNeverShown(t *testing.T) {
	p := newTestProxy(t, 0)
	site := target(t)
	withCreds := strings.Replace(p.srv.URL, "http://", "http://crawler:s3cret-pw@", 1)
	c := newClient(t, Options{Proxies: []string{withCreds}})
	if _, err := c.Get(context.Background(), site.URL); err != nil {
		t.Fatal(err)
	}
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("crawler:s3cret-pw"))
	if p.Auth()[0] != want {
		t.Errorf("the proxy saw Proxy-Authorization %q, want %q", p.Auth()[0], want)
	}
	bad, _ := deadProxy(t)
	c = newClient(t, Options{Proxies: []string{strings.Replace(bad, "http://", "http://crawler:s3cret-pw@", 1)}})
	_, err := c.Get(context.Background(), site.URL)
	if err == nil || strings.Contains(err.Error(), "s3cret-pw") {
		t.Errorf("error through a failing proxy: %v; want one without the password", err)
	}
	for _, raw := range []string{"ftp://u:s3cret-pw@p.test:21", "http://u:s3cret-pw@p.test", "http://u:s3cret-pw@p.test:8080/path", "http://u:s3cret-pw@[bad"} {
		if _, err := ParseProxy(raw); err == nil || strings.Contains(err.Error(), "s3cret-pw") {
			t.Errorf("ParseProxy(%q) = %v; want an error without the password", "...", err)
		}
	}
}

func mustParseProxy(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := ParseProxy(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// socks5Proxy is a SOCKS5 server on loopback for the tests (RFC 1928: no authentication, CONNECT
// only); it counts the connections it carried.
func socks5Proxy(t *testing.T) (string, *atomic.Int64, func() []string) {
	t.Helper()
	var carried atomic.Int64
	var mu sync.Mutex
	var asked []string
	serve := func(c net.Conn) {
		defer c.Close()
		buf := make([]byte, 262)
		if _, err := io.ReadFull(c, buf[:2]); err != nil || buf[0] != 5 {
			return
		}
		if _, err := io.ReadFull(c, buf[:buf[1]]); err != nil {
			return
		}
		c.Write([]byte{5, 0}) // no authentication
		if _, err := io.ReadFull(c, buf[:4]); err != nil || buf[1] != 1 {
			return
		}
		var host string
		switch buf[3] {
		case 1:
			io.ReadFull(c, buf[:4])
			host = net.IP(buf[:4]).String()
		case 3:
			io.ReadFull(c, buf[:1])
			n := int(buf[0])
			io.ReadFull(c, buf[:n])
			host = string(buf[:n])
		default:
			return
		}
		io.ReadFull(c, buf[:2])
		port := int(buf[0])<<8 | int(buf[1])
		mu.Lock()
		asked = append(asked, net.JoinHostPort(host, fmt.Sprint(port)))
		mu.Unlock()
		up, err := net.Dial("tcp", net.JoinHostPort(host, fmt.Sprint(port)))
		if err != nil {
			c.Write([]byte{5, 5, 0, 1, 0, 0, 0, 0, 0, 0})
			return
		}
		defer up.Close()
		carried.Add(1)
		c.Write([]byte{5, 0, 0, 1, 0, 0, 0, 0, 0, 0})
		go io.Copy(up, c)
		io.Copy(c, up)
	}
	return "socks5://" + listen(t, serve), &carried, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), asked...)
	}
}

// The three kinds of proxy carry a request: socks5 (to a plain-http target), and an https proxy
// (TLS to the proxy, whose certificate the client checks).
func TestProxyKinds(t *testing.T) {
	site := target(t)
	socks, carried, _ := socks5Proxy(t)
	c := newClient(t, Options{Proxies: []string{socks}})
	resp, err := c.Get(context.Background(), site.URL+"/s")
	if err != nil || !strings.HasPrefix(string(resp.Body), "page /s") || carried.Load() != 1 {
		t.Errorf("through socks5: %v, carried %d", err, carried.Load())
	}

	p := newTestProxy(t, 0)
	tlsProxy := httptest.NewUnstartedServer(p.srv.Config.Handler)
	tlsProxy.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is expected
	tlsProxy.StartTLS()
	defer tlsProxy.Close()
	roots := x509.NewCertPool()
	roots.AddCert(tlsProxy.Certificate())
	c = newClient(t, Options{Proxies: []string{tlsProxy.URL}, RootCAs: roots})
	resp, err = c.Get(context.Background(), site.URL+"/h")
	if err != nil || !strings.HasPrefix(string(resp.Body), "page /h") || p.CarriedRequests() != 1 {
		t.Errorf("through an https proxy: %v, carried %d", err, p.CarriedRequests())
	}
	// A proxy whose certificate is not trusted carries nothing: the proxy is trusted for its
	// address, not for its TLS.
	c = newClient(t, Options{Proxies: []string{tlsProxy.URL}})
	if _, err := c.Get(context.Background(), site.URL+"/x"); err == nil || p.CarriedRequests() != 1 {
		t.Errorf("through an https proxy with an unknown certificate: %v, carried %d", err, p.CarriedRequests())
	}
}

// ViaProxy tells a failure on the way through a proxy, or with every proxy out, from a target's
// own: a dead proxy's failures are the proxy's, and so is the refusal once it is out; a target
// that refuses connections, reached without a proxy, fails on its own; an answer is no failure.
func TestViaProxy(t *testing.T) {
	bad, _ := deadProxy(t)
	site := target(t)
	c := newClient(t, Options{Proxies: []string{bad}, ProxyFailures: 1, ProxyCooldown: time.Hour})
	for i, want := range []string{"through the dead proxy", "with every proxy out"} {
		_, err := c.Get(context.Background(), fmt.Sprintf("%s/%d", site.URL, i))
		if err == nil || !ViaProxy(err) {
			t.Errorf("%s: err %v, ViaProxy false; want a failure via the proxy", want, err)
		}
	}
	closed := listen(t, func(c net.Conn) { c.Close() })
	direct := newClient(t, Options{})
	if _, err := direct.Get(context.Background(), "http://"+closed+"/"); err == nil || ViaProxy(err) {
		t.Errorf("a target that hangs up, without a proxy: err %v; want a failure not via a proxy", err)
	}
	if ViaProxy(nil) {
		t.Error("ViaProxy(nil) is true")
	}
}
