// Package tunnelproxy is a forward HTTP proxy on loopback for tests. It serves CONNECT tunnels
// and absolute-form requests, resolves the names it is asked for with its own resolver (as a
// proxy in another network would), and records where it was asked to go, where it connected,
// and the Proxy-Authorization it saw. Inside a tunnel that carries plain HTTP it reads each
// request, counts it and marks it with the header Carried, so a test can tell the requests it
// carried from those that went around it; TLS tunnels are relayed as bytes.
package tunnelproxy

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Carried is the header the proxy adds to every plain-HTTP request it carries.
const Carried = "X-Test-Proxy"

// Options configure a Proxy. The zero value is a proxy that resolves with the system resolver.
type Options struct {
	// Resolver resolves the names the proxy is asked for (nil: net.DefaultResolver).
	Resolver *net.Resolver
	// Delay holds every request (CONNECT or not) this long before the proxy acts on it.
	Delay time.Duration
}

// Proxy is a running test proxy.
type Proxy struct {
	Server *httptest.Server
	opts   Options

	carried atomic.Int64
	mu      sync.Mutex
	asked   []string // host:port of each CONNECT, or of each absolute-form request's URL
	dialled []string // ip:port of each connection the proxy opened
	auth    []string // the Proxy-Authorization of each CONNECT or absolute-form request
}

// New starts a proxy on loopback, closed when t ends.
func New(t testing.TB, opts Options) *Proxy {
	t.Helper()
	p := &Proxy{opts: opts}
	p.Server = httptest.NewServer(p)
	t.Cleanup(p.Server.Close)
	return p
}

// URL is the proxy's URL, http://127.0.0.1:port.
func (p *Proxy) URL() string { return p.Server.URL }

// CarriedRequests is how many plain-HTTP requests the proxy carried.
func (p *Proxy) CarriedRequests() int64 { return p.carried.Load() }

// Asked returns the host:port of every CONNECT and absolute-form request, in order.
func (p *Proxy) Asked() []string { return p.snapshot(&p.asked) }

// Dialled returns the ip:port of every connection the proxy opened, in order.
func (p *Proxy) Dialled() []string { return p.snapshot(&p.dialled) }

// Auth returns the Proxy-Authorization of every CONNECT and absolute-form request, in order.
func (p *Proxy) Auth() []string { return p.snapshot(&p.auth) }

func (p *Proxy) snapshot(s *[]string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), (*s)...)
}

func (p *Proxy) note(r *http.Request, hostport string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked = append(p.asked, hostport)
	p.auth = append(p.auth, r.Header.Get("Proxy-Authorization"))
}

// dial resolves hostport's host with the proxy's resolver, connects to its first address and
// records it.
func (p *Proxy) dial(ctx context.Context, hostport string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		r := p.opts.Resolver
		if r == nil {
			r = net.DefaultResolver
		}
		ips, err := r.LookupNetIP(ctx, "ip4", host)
		if err != nil {
			return nil, err
		}
		ip = ips[0]
	}
	addr := net.JoinHostPort(ip.String(), port)
	p.mu.Lock()
	p.dialled = append(p.dialled, addr)
	p.mu.Unlock()
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p.opts.Delay > 0 {
		select {
		case <-time.After(p.opts.Delay):
		case <-r.Context().Done():
			return
		}
	}
	switch {
	case r.Method == http.MethodConnect:
		p.connect(w, r)
	case r.URL.IsAbs():
		p.forward(w, r)
	default:
		http.Error(w, "not a proxy request", http.StatusBadRequest)
	}
}

// forward carries an absolute-form request.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request) {
	hostport := r.URL.Host
	if r.URL.Port() == "" {
		hostport = net.JoinHostPort(r.URL.Hostname(), "80")
	}
	p.note(r, hostport)
	up, err := p.dial(r.Context(), hostport)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer up.Close()
	out := r.Clone(r.Context())
	out.Header.Del("Proxy-Authorization")
	out.Header.Set(Carried, "1")
	out.RequestURI = ""
	p.carried.Add(1)
	if err := out.Write(up); err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	resp, err := http.ReadResponse(bufio.NewReader(up), out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

// connect opens a tunnel to the CONNECT's target.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	p.note(r, r.Host)
	up, err := p.dial(r.Context(), r.Host)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer up.Close()
	c, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer c.Close()
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	client := brw.Reader
	first, err := client.Peek(1)
	if err != nil {
		return
	}
	if first[0] == 0x16 { // a TLS handshake: relay the bytes
		go func() { io.Copy(up, client); up.(*net.TCPConn).CloseWrite() }()
		io.Copy(c, up)
		return
	}
	upr := bufio.NewReader(up)
	for {
		req, err := http.ReadRequest(client)
		if err != nil {
			return
		}
		req.Header.Set(Carried, "1")
		p.carried.Add(1)
		if err := req.Write(up); err != nil {
			return
		}
		resp, err := http.ReadResponse(upr, req)
		if err != nil {
			return
		}
		err = resp.Write(c)
		resp.Body.Close()
		if err != nil || resp.Close || req.Close {
			return
		}
	}
}
