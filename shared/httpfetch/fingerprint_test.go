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
	"sync"
	"testing"

	"github.com/crawlstack/crawlstack/shared/errclass"
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
	var mu sync.Mutex
	var seen []hello
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "secure "+r.Proto)
	}))
	srv.EnableHTTP2 = true
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
		fingerprint string
		wantGREASE  bool
		wantALPN    []string
		wantProto   string
	}{
		{FingerprintGo, false, []string{"h2", "http/1.1"}, "HTTP/2.0"},
		{FingerprintChrome, true, []string{"http/1.1"}, "HTTP/1.1"},
	}
	for _, tt := range tests {
		t.Run(fpName(tt.fingerprint), func(t *testing.T) {
			srv, seen := tlsServer(t)
			roots := x509.NewCertPool()
			roots.AddCert(srv.Certificate())
			c := newClient(t, Options{Fingerprint: tt.fingerprint, RootCAs: roots})
			resp, err := c.Get(context.Background(), srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			if want := "secure " + tt.wantProto; string(resp.Body) != want {
				t.Errorf("body = %q, want %q", resp.Body, want)
			}
			hs := seen()
			if len(hs) != 1 {
				t.Fatalf("server saw %d ClientHellos, want 1", len(hs))
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

func fpName(fp string) string {
	if fp == FingerprintGo {
		return "go"
	}
	return fp
}
