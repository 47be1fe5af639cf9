package crawlstack

import (
	"os"
	"strings"
	"testing"
)

// The stack's fingerprint settings are spelled as the fetch function reads them.
func TestFingerprintSettingsMatchTheFetcher(t *testing.T) {
	var src strings.Builder
	for _, f := range []string{"../../shared/crawl/web/httpfetch/httpfetch.go", "../../shared/crawl/web/httpfetch/fingerprint.go"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src.Write(b)
	}
	for _, want := range []string{`FingerprintChrome = "` + fingerprintChrome + `"`, `UserAgentBrowser = "` + userAgentBrowser + `"`} {
		if !strings.Contains(src.String(), want) {
			t.Errorf("shared/crawl/web/httpfetch has no %s: the stack's setting and the fetcher's differ", want)
		}
	}
}

// A stack deployed with tlsFingerprint gives it to every crawl function, with its User-Agent; a
// stack without it sets no CRAWL_TLS_FINGERPRINT (Go's own).
func TestTheStacksTLSFingerprint(t *testing.T) {
	for _, tt := range []struct {
		ctx    map[string]any
		fp, ua any
	}{
		{map[string]any{"tlsFingerprint": "chrome", "userAgent": "browser"}, "chrome", "browser"},
		{nil, nil, DefaultConfig().UserAgent},
	} {
		_, parsed := synthWith(t, tt.ctx)
		fns := crawlFunctionEnvs(parsed)
		for id, vars := range fns {
			if vars["CRAWL_TLS_FINGERPRINT"] != tt.fp || vars["CRAWL_USER_AGENT"] != tt.ua {
				t.Errorf("%v: %s has CRAWL_TLS_FINGERPRINT %v and CRAWL_USER_AGENT %v, want %v and %v",
					tt.ctx, id, vars["CRAWL_TLS_FINGERPRINT"], vars["CRAWL_USER_AGENT"], tt.fp, tt.ua)
			}
		}
		if len(fns) != 4 {
			t.Errorf("%v: %d crawl functions, want 4 (the slow lane's with the three, by default)", tt.ctx, len(fns))
		}
	}
}
