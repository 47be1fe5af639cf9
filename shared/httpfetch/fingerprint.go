package httpfetch

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"time"

	utls "github.com/refraction-networking/utls"
)

// chromeDialer returns a DialTLSContext that speaks TLS with Chrome's ClientHello
// (utls.HelloChrome_Auto). ALPN offers only http/1.1: net/http only runs HTTP/2 over its own
// *tls.Conn, so offering h2 here would negotiate a protocol the transport cannot speak.
// The TCP dial goes through the guarded dialer, so the SSRF check still runs on every IP.
func chromeDialer(d *net.Dialer, roots *x509.CertPool, handshakeTimeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("chrome tls dial %s: %w", addr, err)
		}
		spec, err := utls.UTLSIdToSpec(utls.HelloChrome_Auto)
		if err != nil {
			return nil, fmt.Errorf("chrome tls spec: %w", err)
		}
		for _, ext := range spec.Extensions {
			if alpn, ok := ext.(*utls.ALPNExtension); ok {
				alpn.AlpnProtocols = []string{"http/1.1"}
			}
		}
		raw, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		conn := utls.UClient(raw, &utls.Config{ServerName: host, RootCAs: roots}, utls.HelloCustom)
		if err := conn.ApplyPreset(&spec); err != nil {
			raw.Close()
			return nil, fmt.Errorf("chrome tls preset: %w", err)
		}
		hctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
		defer cancel()
		if err := conn.HandshakeContext(hctx); err != nil {
			raw.Close()
			return nil, fmt.Errorf("chrome tls handshake with %s: %w", addr, err)
		}
		return conn, nil
	}
}
