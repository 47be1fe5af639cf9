package httpfetch

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andybalholm/brotli"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/web/netguard"
)

const testUA = "crawlstack-test/0.1"

// loopbackGuard allows only 127.0.0.1, so other loopback and private addresses stay refused.
func loopbackGuard() *netguard.Guard {
	return netguard.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, nil)
}

func newClient(t *testing.T, opts Options) *Client {
	t.Helper()
	if opts.UserAgent == "" {
		opts.UserAgent = testUA
	}
	if opts.Guard == nil {
		opts.Guard = loopbackGuard()
	}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func wantClass(t *testing.T, err error, want errclass.Class) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want class %q", want)
	}
	if got := errclass.Of(err); got != want {
		t.Fatalf("class = %q (%v), want %q", got, err, want)
	}
}

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name string
		opts Options
	}{
		{"empty user agent", Options{}},
		{"unknown fingerprint", Options{UserAgent: testUA, Fingerprint: "firefox"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.opts); err == nil {
				t.Fatal("New succeeded, want an error")
			}
		})
	}
}

func TestGet(t *testing.T) {
	var gotUA, gotAE atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotUA.Store(r.UserAgent())
		gotAE.Store(r.Header.Get("Accept-Encoding"))
		switch r.URL.Path {
		case "/missing":
			http.NotFound(w, r)
		case "/busy":
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<p>hello</p>")
		}
	}))
	defer srv.Close()
	c := newClient(t, Options{})
	tests := []struct {
		path   string
		status int
		body   string
	}{
		{"/", 200, "<p>hello</p>"},
		{"/missing", 404, "404 page not found\n"},
		{"/busy", 503, ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			resp, err := c.Get(context.Background(), srv.URL+tt.path)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Status != tt.status || string(resp.Body) != tt.body || resp.URL != srv.URL+tt.path {
				t.Errorf("got %d %q at %s, want %d %q at %s", resp.Status, resp.Body, resp.URL, tt.status, tt.body, srv.URL+tt.path)
			}
			if gotUA.Load() != testUA || gotAE.Load() != "gzip, deflate, br" {
				t.Errorf("sent UA %q, Accept-Encoding %q", gotUA.Load(), gotAE.Load())
			}
		})
	}
}

func TestRefusesBeforeRequest(t *testing.T) {
	c := newClient(t, Options{Guard: netguard.New(nil, nil)})
	for _, u := range []string{"http://127.0.0.1:1/", "ftp://example.com/", "http://0x7f.1/", "http://169.254.169.254/"} {
		t.Run(u, func(t *testing.T) {
			_, err := c.Get(context.Background(), u)
			wantClass(t, err, errclass.SSRF)
		})
	}
}

func encode(t *testing.T, coding string, p []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w io.WriteCloser
	switch coding {
	case "gzip":
		w = gzip.NewWriter(&buf)
	case "deflate":
		w = zlib.NewWriter(&buf)
	case "raw-deflate":
		w, _ = flate.NewWriter(&buf, flate.DefaultCompression)
	case "br":
		w = brotli.NewWriter(&buf)
	default:
		return p
	}
	w.Write(p)
	w.Close()
	return buf.Bytes()
}

func TestDecoding(t *testing.T) {
	const text = "hello, hostile web"
	tests := []struct {
		name, header, coding string
		body                 []byte
		want                 string
		class                errclass.Class
	}{
		{"identity", "", "", nil, text, ""},
		{"gzip", "gzip", "gzip", nil, text, ""},
		{"deflate zlib", "deflate", "deflate", nil, text, ""},
		{"deflate raw", "deflate", "raw-deflate", nil, text, ""},
		{"br", "br", "br", nil, text, ""},
		{"upper case", "GZIP", "gzip", nil, text, ""},
		{"empty gzip body", "gzip", "", []byte{}, "", ""},
		{"corrupt gzip", "gzip", "", []byte("not gzip at all"), "", errclass.Parse},
		{"corrupt deflate", "deflate", "", []byte("\xff\xff\xff\xff not deflate"), "", errclass.Parse},
		{"corrupt br", "br", "", []byte("\xff\xff\xff\xff not brotli"), "", errclass.Parse},
		{"truncated gzip", "gzip", "", encode(t, "gzip", []byte(text))[:12], "", errclass.Parse},
		{"unknown coding", "zz", "", []byte("x"), "", errclass.Type},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := tt.body
			if body == nil {
				body = encode(t, tt.coding, []byte(text))
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.header != "" {
					w.Header().Set("Content-Encoding", tt.header)
				}
				w.Write(body)
			}))
			defer srv.Close()
			resp, err := newClient(t, Options{}).Get(context.Background(), srv.URL)
			if tt.class != "" {
				wantClass(t, err, tt.class)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(resp.Body) != tt.want {
				t.Errorf("body = %q, want %q", resp.Body, tt.want)
			}
		})
	}
}

// bombBytes is what a bomb decodes to: 64 times the cap TestBombs sets, so that a client that
// ignored the cap reads it whole, in little time and memory, and fails on the test's assertion
// rather than on the OOM killer or go test's timeout.
const bombBytes = 64 << 20

// bomb streams a compressed run of bombBytes zeros, or until the client goes away.
func bomb(coding string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", coding)
		var zw io.WriteCloser
		switch coding {
		case "gzip":
			zw, _ = gzip.NewWriterLevel(w, gzip.BestCompression)
		case "deflate":
			zw, _ = zlib.NewWriterLevel(w, zlib.BestCompression)
		case "br":
			zw = brotli.NewWriterLevel(w, brotli.BestSpeed)
		}
		zeros := make([]byte, 64<<10)
		for written := int64(0); written < bombBytes; written += int64(len(zeros)) {
			if _, err := zw.Write(zeros); err != nil {
				return
			}
			if r.Context().Err() != nil {
				return
			}
		}
		zw.Close()
	}
}

func TestBombs(t *testing.T) {
	for _, coding := range []string{"gzip", "deflate", "br"} {
		t.Run(coding, func(t *testing.T) {
			srv := httptest.NewServer(bomb(coding))
			defer srv.Close()
			c := newClient(t, Options{MaxDecodedBytes: 1 << 20, TotalTimeout: 20 * time.Second})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			resp, err := c.Get(ctx, srv.URL)
			if err == nil {
				t.Fatalf("read a body of %d bytes past the 1 MiB cap", len(resp.Body))
			}
			wantClass(t, err, errclass.TooLarge)
			if !strings.Contains(err.Error(), "decoded body") {
				t.Errorf("err = %v, want the decoded-body cap", err)
			}
		})
	}
}

func TestRawBodyCap(t *testing.T) {
	const limit = 64 << 10
	tests := []struct {
		name    string
		size    int
		chunked bool
		class   errclass.Class
	}{
		{"exactly the cap", limit, false, ""},
		{"exactly the cap chunked", limit, true, ""},
		{"over with content-length", limit + 1, false, errclass.TooLarge},
		{"over chunked", 4 * limit, true, errclass.TooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if !tt.chunked {
					w.Header().Set("Content-Length", fmt.Sprint(tt.size))
				}
				w.Write(bytes.Repeat([]byte("a"), tt.size/2))
				w.(http.Flusher).Flush()
				w.Write(bytes.Repeat([]byte("a"), tt.size-tt.size/2))
			}))
			defer srv.Close()
			resp, err := newClient(t, Options{MaxBodyBytes: limit}).Get(context.Background(), srv.URL)
			if tt.class != "" {
				wantClass(t, err, tt.class)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Body) != tt.size {
				t.Errorf("body is %d bytes, want %d", len(resp.Body), tt.size)
			}
		})
	}
}

func TestGetLimitedTruncates(t *testing.T) {
	plain := bytes.Repeat([]byte("a"), 2000)
	tests := []struct {
		name          string
		coding        string
		maxBody       int64
		wantLen       int
		wantTruncated bool
	}{
		{"over the cap is cut", "", 1000, 1000, true},
		{"at the cap is whole", "", 2000, 2000, false},
		{"decoded bytes count", "gzip", 1000, 1000, true},
		{"client limits when 0", "", 0, 2000, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := encode(t, tt.coding, plain)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.coding != "" {
					w.Header().Set("Content-Encoding", tt.coding)
				}
				w.Write(body)
			}))
			defer srv.Close()
			resp, err := newClient(t, Options{}).GetLimited(context.Background(), srv.URL, tt.maxBody, -1)
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Body) != tt.wantLen || resp.Truncated != tt.wantTruncated {
				t.Errorf("got %d bytes, truncated %v; want %d, %v", len(resp.Body), resp.Truncated, tt.wantLen, tt.wantTruncated)
			}
		})
	}
}

// stall is a handler that waits for the client to give up, or for the test to end.
func stall(done <-chan struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}
}

// trickle sends headers, then one byte every gap, forever.
func trickle(gap time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		for {
			if _, err := w.Write([]byte("x")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(gap):
			}
		}
	}
}

func TestTimeouts(t *testing.T) {
	done := make(chan struct{})
	defer close(done)
	tests := []struct {
		name    string
		handler http.Handler
		opts    Options
		within  time.Duration // the client must give up before this
		want    string
	}{
		{"header timeout", stall(done),
			Options{HeaderTimeout: 200 * time.Millisecond}, 3 * time.Second, "timeout awaiting response headers"},
		{"trickle cut by idle read timeout", trickle(5 * time.Second),
			Options{IdleReadTimeout: 200 * time.Millisecond}, 4 * time.Second, "no body bytes"},
		{"fast trickle cut by total timeout", trickle(20 * time.Millisecond),
			Options{IdleReadTimeout: 2 * time.Second, TotalTimeout: 400 * time.Millisecond}, 3 * time.Second, "took too long"},
		// A byte every 50 ms keeps clear of the idle timeout; its rate (20 bytes/s) cuts it off
		// once MinRateAfter has passed, long before the total timeout.
		{"trickle cut by its rate", trickle(50 * time.Millisecond),
			Options{IdleReadTimeout: 2 * time.Second, TotalTimeout: 20 * time.Second, MinBodyRate: 1024,
				MinRateAfter: 300 * time.Millisecond}, 3 * time.Second, "below 1024 bytes/s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			start := time.Now()
			_, err := newClient(t, tt.opts).Get(context.Background(), srv.URL)
			wantClass(t, err, errclass.Timeout)
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to mention %q", err, tt.want)
			}
			if el := time.Since(start); el > tt.within {
				t.Errorf("gave up after %v, want under %v", el, tt.within)
			}
		})
	}
}

// A body slower than MinBodyRate at first but above it on average once MinRateAfter has passed
// is read whole.
func TestABodyAboveTheMinimumRateIsReadWhole(t *testing.T) {
	chunk := strings.Repeat("y", 4096)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		for range 8 {
			if _, err := w.Write([]byte(chunk)); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}))
	defer srv.Close()
	// 4 KiB every 50 ms is about 80 KiB/s: well above 16 KiB/s, the floor here.
	resp, err := newClient(t, Options{MinBodyRate: 16 << 10, MinRateAfter: 100 * time.Millisecond}).Get(context.Background(), srv.URL)
	if err != nil || len(resp.Body) != 8*len(chunk) {
		t.Fatalf("Get = %v; want the whole body of %d bytes", err, 8*len(chunk))
	}
}

func TestOversizeHeader(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Big", strings.Repeat("b", 64<<10))
	}))
	defer srv.Close()
	_, err := newClient(t, Options{MaxHeaderBytes: 16 << 10}).Get(context.Background(), srv.URL)
	wantClass(t, err, errclass.TooLarge)
}

// redirector redirects /n to /n+1 until /end, which answers "end".
func redirector(hops int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var n int
		if r.URL.Path == "/end" {
			io.WriteString(w, "end")
			return
		}
		fmt.Sscanf(r.URL.Path, "/%d", &n)
		next := fmt.Sprintf("/%d", n+1)
		if n+1 >= hops {
			next = "/end"
		}
		http.Redirect(w, r, next, http.StatusFound)
	}
}

func TestRedirects(t *testing.T) {
	tests := []struct {
		name         string
		hops         int
		maxRedirects int // Options.MaxRedirects
		perRequest   int // GetLimited's maxRedirects, -1 for the client's
		wantHops     int
		class        errclass.Class
	}{
		{"no redirect", 0, 0, -1, 0, ""},
		{"three within the default five", 3, 0, -1, 3, ""},
		{"five is the default limit", 5, 0, -1, 5, ""},
		{"six is over the default", 6, 0, -1, 0, errclass.Redirect},
		{"endless loop", 1 << 30, 3, -1, 0, errclass.Redirect},
		{"negative option follows none", 1, -1, -1, 0, errclass.Redirect},
		{"per request zero follows none", 1, 0, 0, 0, errclass.Redirect},
		{"per request raises the limit", 7, 0, 7, 7, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(redirector(tt.hops))
			defer srv.Close()
			c := newClient(t, Options{MaxRedirects: tt.maxRedirects})
			start := srv.URL + "/0"
			if tt.hops == 0 {
				start = srv.URL + "/end"
			}
			resp, err := c.GetLimited(context.Background(), start, 0, tt.perRequest)
			if tt.class != "" {
				wantClass(t, err, tt.class)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Redirects) != tt.wantHops || resp.URL != srv.URL+"/end" || string(resp.Body) != "end" {
				t.Errorf("got %d redirects %v to %s (%q), want %d to /end", len(resp.Redirects), resp.Redirects, resp.URL, resp.Body, tt.wantHops)
			}
			if tt.wantHops > 0 && resp.Redirects[0] != start {
				t.Errorf("first redirect = %s, want %s", resp.Redirects[0], start)
			}
		})
	}
}

func TestRedirectToBlockedAddress(t *testing.T) {
	// A server on 127.0.0.2 that must never be reached: the guard allows only 127.0.0.1.
	var hits atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.2: %v", err)
	}
	inner := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
	}))
	inner.Listener = ln
	inner.Start()
	defer inner.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	resolver := fakeDNS(t, map[string]netip.Addr{"rebind.test": netip.MustParseAddr("127.0.0.2")})

	tests := []struct {
		name, target string
	}{
		{"metadata address", "http://169.254.169.254/latest/meta-data/"},
		{"other loopback literal", "http://127.0.0.2:" + port + "/"},
		{"ipv6 loopback", "http://[::1]:" + port + "/"},
		{"octal loopback", "http://0177.0.0.2:" + port + "/"},
		{"name resolving to a blocked address", "http://rebind.test:" + port + "/"},
		{"file scheme", "file:///etc/passwd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, tt.target, http.StatusFound)
			}))
			defer srv.Close()
			c := newClient(t, Options{Resolver: resolver})
			_, err := c.Get(context.Background(), srv.URL)
			wantClass(t, err, errclass.SSRF)
			if n := hits.Load(); n != 0 {
				t.Fatalf("the blocked server was reached %d times", n)
			}
		})
	}
}

func TestDNSErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	resolver := fakeDNS(t, map[string]netip.Addr{"site.test": netip.MustParseAddr("127.0.0.1")})
	c := newClient(t, Options{Resolver: resolver})
	tests := []struct {
		host     string
		class    errclass.Class
		notFound bool
	}{
		{"site.test", "", false},
		{"nx.test", errclass.DNS, true},
		{"fail.test", errclass.Connect, false},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			_, err := c.Get(context.Background(), "http://"+tt.host+":"+port+"/")
			if tt.class == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantClass(t, err, tt.class)
			// A name that does not exist (NXDOMAIN) is permanent; other DNS failures retry. The
			// resolver's answer stays in the chain for callers that look.
			var de *net.DNSError
			if notFound := errors.As(err, &de) && de.IsNotFound; notFound != tt.notFound {
				t.Errorf("%v: a DNSError that says not found: %v, want %v", err, notFound, tt.notFound)
			}
			if errclass.Retryable(errclass.Of(err)) == tt.notFound {
				t.Errorf("retryable = %v for %v", !tt.notFound, err)
			}
		})
	}
}

func TestConnectRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = newClient(t, Options{}).Get(context.Background(), "http://"+addr+"/")
	wantClass(t, err, errclass.Connect)
}

func TestConnectionReuse(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c := newClient(t, Options{})
	for i := range 20 {
		if _, err := c.Get(context.Background(), fmt.Sprintf("%s/%d", srv.URL, i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("20 sequential fetches opened %d connections, want 1", n)
	}
}

func TestCancelledContext(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := newClient(t, Options{}).Get(ctx, srv.URL)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestBodyCutShort(t *testing.T) {
	tests := []struct {
		name   string
		coding string
	}{
		{"identity", ""},
		{"gzip", "gzip"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := encode(t, tt.coding, bytes.Repeat([]byte("hello "), 1000))
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", fmt.Sprint(len(body)))
				if tt.coding != "" {
					w.Header().Set("Content-Encoding", tt.coding)
				}
				w.Write(body[:len(body)/2])
				w.(http.Flusher).Flush()
				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					conn.Close()
				}
			}))
			defer srv.Close()
			_, err := newClient(t, Options{}).Get(context.Background(), srv.URL)
			wantClass(t, err, errclass.Connect)
		})
	}
}

// TestMaxInFlight holds every request at the site until the test lets it go: ten requests through
// a client of three slots reach the site three at a time, and a request that gives up while it
// waits for a slot fails with its context's error and never reaches the site.
func TestMaxInFlight(t *testing.T) {
	var inFlight, most, served atomic.Int64
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		n := inFlight.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		defer inFlight.Add(-1)
		select {
		case <-release:
			io.WriteString(w, "ok")
		case <-r.Context().Done(): // the client gave up
		}
	}))
	defer srv.Close()
	c := newClient(t, Options{MaxInFlight: 3})
	errs := make(chan error, 10)
	for i := range 10 {
		go func() {
			_, err := c.Get(context.Background(), fmt.Sprintf("%s/%d", srv.URL, i))
			errs <- err
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for inFlight.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests reached the site in 10 s, want 3", inFlight.Load())
		}
		runtime.Gosched()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := c.Get(ctx, srv.URL+"/gave-up"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a request that gave up waiting for a slot: err = %v, want context.DeadlineExceeded", err)
	}
	close(release)
	for range 10 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if most.Load() != 3 || served.Load() != 10 {
		t.Errorf("the site got %d requests, at most %d at once; want 10, at most 3", served.Load(), most.Load())
	}
	if _, err := New(Options{UserAgent: testUA, MaxInFlight: -1}); err == nil {
		t.Error("New accepted a negative MaxInFlight")
	}
}
