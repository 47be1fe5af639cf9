package httpfetch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strings"

	utls "github.com/refraction-networking/utls"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
)

// classify gives err an errclass class. Errors that already have one keep it.
func classify(ctx context.Context, err error, idle *idleTimer) error {
	var ce *errclass.Error
	if errors.As(err, &ce) {
		return err
	}
	if idle.fired.Load() {
		return errclass.Errorf(errclass.Timeout, "no body bytes for %s: %v", idle.d, err)
	}
	var slow *tooSlow
	if errors.As(err, &slow) {
		return errclass.New(errclass.Timeout, err)
	}
	switch cerr := ctx.Err(); {
	case errors.Is(cerr, context.DeadlineExceeded):
		return errclass.Errorf(errclass.Timeout, "fetch took too long: %v", err)
	case errors.Is(cerr, context.Canceled):
		return errclass.New(errclass.Internal, err) // the caller gave up: not the site's fault
	}
	var de *net.DNSError
	if errors.As(err, &de) {
		switch {
		case de.IsNotFound:
			return errclass.New(errclass.DNS, err)
		case de.IsTimeout:
			return errclass.New(errclass.Timeout, err)
		}
		return errclass.New(errclass.Connect, err)
	}
	if isTLS(err) {
		return errclass.New(errclass.TLS, err)
	}
	// net/http has no types for these two.
	if strings.Contains(err.Error(), "server response headers exceeded") {
		return errclass.New(errclass.TooLarge, err)
	}
	if strings.Contains(err.Error(), "failed to parse Location header") {
		return errclass.New(errclass.Redirect, err)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return errclass.New(errclass.Timeout, err)
	}
	// Refused, reset, closed early, or a malformed response: worth another try.
	return errclass.New(errclass.Connect, err)
}

func isTLS(err error) bool {
	var (
		rh   tls.RecordHeaderError
		al   tls.AlertError
		cv   *tls.CertificateVerificationError
		ua   x509.UnknownAuthorityError
		ci   x509.CertificateInvalidError
		hn   x509.HostnameError
		urh  utls.RecordHeaderError
		ual  utls.AlertError
		ucv  *utls.CertificateVerificationError
		echr *tls.ECHRejectionError
	)
	return errors.As(err, &rh) || errors.As(err, &al) || errors.As(err, &cv) ||
		errors.As(err, &ua) || errors.As(err, &ci) || errors.As(err, &hn) ||
		errors.As(err, &urh) || errors.As(err, &ual) || errors.As(err, &ucv) || errors.As(err, &echr) ||
		strings.Contains(err.Error(), "tls: ")
}
