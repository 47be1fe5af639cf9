package crawlstack

import "strings"

// The values of the tlsFingerprint and userAgent settings that the fetch function knows
// (shared/crawl/web/httpfetch: FingerprintChrome, UserAgentBrowser). infra is a module of its own, so they
// are spelled here again; TestFingerprintSettingsMatchTheFetcher holds them to the fetcher's.
const (
	fingerprintChrome = "chrome"
	userAgentBrowser  = "browser"
)

// checkFingerprint checks tlsFingerprint, and that a browser's User-Agent comes with a browser's
// fingerprint, whose browser it names.
func checkFingerprint(c Config, bad func(key, format string, args ...any)) {
	if c.TLSFingerprint != "" && c.TLSFingerprint != fingerprintChrome {
		bad("tlsFingerprint", "must be %s (Chrome's ClientHello, HTTP/2 when the server chooses it) or empty for Go's own, got %q",
			fingerprintChrome, c.TLSFingerprint)
	}
	if strings.TrimSpace(c.UserAgent) == userAgentBrowser && c.TLSFingerprint != fingerprintChrome {
		bad("userAgent", "%q sends the User-Agent of the browser whose ClientHello tlsFingerprint sends: set tlsFingerprint to %s",
			userAgentBrowser, fingerprintChrome)
	}
}
