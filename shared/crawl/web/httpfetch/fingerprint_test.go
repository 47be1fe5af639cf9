package httpfetch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/web/netguard"
)

// hello is what the server saw of a ClientHello.
type hello struct {
	ciphers    []uint16
	versions   []uint16
	alpn       []string
	extensions []uint16
}

// isGREASE reports whether v is a GREASE value (RFC 8701), which Chrome sends and Go never does.
func isGREASE(v uint16) bool { return v&0x0f0f == 0x0a0a && v>>8 == v&0xff }

func tlsServer(t *testing.T) (*httptest.Server, func() []hello) {
	t.Helper()
	return tlsServerSpeaking(t, true)
}

// tlsServerSpeaking is a TLS server on loopback that offers HTTP/2 when h2 is set (HTTP/1.1
// only otherwise), answers with the protocol the request came over, and keeps the ClientHellos
// it saw.
func tlsServerSpeaking(t *testing.T, h2 bool) (*httptest.Server, func() []hello) {
	t.Helper()
	var mu sync.Mutex
	var seen []hello
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "secure "+r.Proto)
	}))
	srv.EnableHTTP2 = h2
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are expected
	srv.TLS = &tls.Config{GetConfigForClient: func(chi *tls.ClientHelloInfo) (*tls.Config, error) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, hello{
			ciphers:    slices.Clone(chi.CipherSuites),
			versions:   slices.Clone(chi.SupportedVersions),
			alpn:       slices.Clone(chi.SupportedProtos),
			extensions: slices.Clone(chi.Extensions),
		})
		return nil, nil
	}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, func() []hello {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

func TestFingerprint(t *testing.T) {
	tests := []struct {
		name        string
		fingerprint string
		serverH2    bool
		wantGREASE  bool
		wantALPN    []string
		wantProto   string
	}{
		{"go", FingerprintGo, true, false, []string{"h2", "http/1.1"}, "HTTP/2.0"},
		// Chrome's ALPN as Chrome sends it, and HTTP/2 spoken over the utls connection.
		{"chrome", FingerprintChrome, true, true, []string{"h2", "http/1.1"}, "HTTP/2.0"},
		{"chrome to an HTTP/1.1 server", FingerprintChrome, false, true, []string{"h2", "http/1.1"}, "HTTP/1.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, seen := tlsServerSpeaking(t, tt.serverH2)
			roots := x509.NewCertPool()
			roots.AddCert(srv.Certificate())
			c := newClient(t, Options{Fingerprint: tt.fingerprint, RootCAs: roots})
			// Three requests in turn: the connection dialled for the first is kept for the rest.
			for i := range 3 {
				resp, err := c.Get(context.Background(), srv.URL+"/"+strconv.Itoa(i))
				if err != nil {
					t.Fatal(err)
				}
				if want := "secure " + tt.wantProto; string(resp.Body) != want {
					t.Errorf("request %d: body = %q, want %q", i, resp.Body, want)
				}
			}
			hs := seen()
			if len(hs) != 1 {
				t.Fatalf("server saw %d ClientHellos for 3 requests, want 1", len(hs))
			}
			h := hs[0]
			if got := slices.ContainsFunc(h.ciphers, isGREASE); got != tt.wantGREASE {
				t.Errorf("GREASE in cipher suites = %v, want %v (%x)", got, tt.wantGREASE, h.ciphers)
			}
			if got := slices.ContainsFunc(h.extensions, isGREASE); got != tt.wantGREASE {
				t.Errorf("GREASE in extensions = %v, want %v (%x)", got, tt.wantGREASE, h.extensions)
			}
			if !slices.Equal(h.alpn, tt.wantALPN) {
				t.Errorf("ALPN = %q, want %q", h.alpn, tt.wantALPN)
			}
			if !slices.Contains(h.versions, tls.VersionTLS13) {
				t.Errorf("supported versions %x lack TLS 1.3", h.versions)
			}
		})
	}
}

func TestUntrustedCertificate(t *testing.T) {
	for _, fp := range []string{FingerprintGo, FingerprintChrome} {
		t.Run(fpName(fp), func(t *testing.T) {
			srv, _ := tlsServer(t)
			_, err := newClient(t, Options{Fingerprint: fp, RootCAs: x509.NewCertPool()}).Get(context.Background(), srv.URL)
			wantClass(t, err, errclass.TLS)
		})
	}
}

// A crawl's spec can ask for the fingerprint per request (WithFingerprint): a client with Go's
// own sends Chrome's ClientHello for those requests, and Go's for the rest.
func TestFingerprintPerRequest(t *testing.T) {
	srv, seen := tlsServer(t)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	c := newClient(t, Options{RootCAs: roots})
	for _, fp := range []string{FingerprintChrome, FingerprintGo} {
		if _, err := c.Get(WithFingerprint(context.Background(), fp), srv.URL); err != nil {
			t.Fatal(err)
		}
	}
	hs := seen()
	if len(hs) != 2 || !slices.ContainsFunc(hs[0].ciphers, isGREASE) || slices.ContainsFunc(hs[1].ciphers, isGREASE) {
		t.Errorf("ClientHellos with GREASE: want Chrome's then Go's, got %d hellos %+v", len(hs), hs)
	}
}

// The User-Agent agrees with the fingerprint when the user asks for both.
func TestUserAgentFor(t *testing.T) {
	own := "mybot/1.0 (+https://example.com/bot)"
	tests := []struct {
		ua, fp, want string
		wantErr      bool
	}{
		{own, FingerprintGo, own, false},
		{own, FingerprintChrome, own, false},
		{UserAgentBrowser, FingerprintChrome, ChromeUserAgent, false},
		{UserAgentBrowser, FingerprintGo, "", true},
		{"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36", FingerprintChrome, "", true},
		{"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/133.0.6943.53 Safari/537.36", FingerprintChrome,
			"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/133.0.6943.53 Safari/537.36", false},
	}
	for _, tt := range tests {
		got, err := UserAgentFor(tt.ua, tt.fp)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("UserAgentFor(%q, %q) = %q, %v; want %q, error %v", tt.ua, tt.fp, got, err, tt.want, tt.wantErr)
		}
	}
	// The Chrome of the User-Agent is the Chrome of the ClientHello.
	if !strings.Contains(ChromeUserAgent, " Chrome/"+ChromeHello.Version+".") {
		t.Errorf("ChromeUserAgent %q is not Chrome %s's", ChromeUserAgent, ChromeHello.Version)
	}
}

func fpName(fp string) string {
	if fp == FingerprintGo {
		return "go"
	}
	return fp
}

// The SSRF guard runs on the dials of Chrome's fingerprint too: loopback is refused by default.
func TestChromeFingerprintKeepsTheGuard(t *testing.T) {
	srv, seen := tlsServer(t)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	c := newClient(t, Options{Fingerprint: FingerprintChrome, RootCAs: roots, Guard: netguard.New(nil, nil)})
	_, err := c.Get(context.Background(), srv.URL)
	wantClass(t, err, errclass.SSRF)
	if n := len(seen()); n != 0 {
		t.Errorf("the server saw %d ClientHellos, want none", n)
	}
}

// An HTTP/2 server that sends no headers within the header timeout fails the request as a
// timeout, as net/http's ResponseHeaderTimeout does for HTTP/1.1.
func TestChromeHTTP2HeaderTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	defer close(release)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	c := newClient(t, Options{Fingerprint: FingerprintChrome, RootCAs: roots, HeaderTimeout: 200 * time.Millisecond})
	_, err := c.Get(context.Background(), srv.URL)
	wantClass(t, err, errclass.Timeout)
}
