package netguard

import (
	"net/netip"
	"net/url"
	"strings"
	"testing"

	whatwg "github.com/nlnwa/whatwg-url/url"
)

// FuzzCheckURL checks that a URL the guard accepts is http(s) and, whether Go or a browser reads
// its host, never names a non-public IP literal.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"http://example.com/", "http://127.0.0.1/", "http://0177.0.0.1/", "http://2130706433/",
		"http://0x7f.1/", "http://[::ffff:127.0.0.1]/", "https://[::1]:443/", "http://169.254.169.254/",
		"http://example.com:8080/", "ftp://example.com/", "http://1.1.1.1./", "http://0x08.0x08.0x08.0x08/"} {
		f.Add(s)
	}
	g := New(nil, nil)
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := url.Parse(raw)
		if err != nil || g.CheckURL(u) != nil {
			return
		}
		if s := strings.ToLower(u.Scheme); s != "http" && s != "https" {
			t.Fatalf("accepted scheme %q in %q", u.Scheme, raw)
		}
		if a, err := netip.ParseAddr(u.Hostname()); err == nil && !IsPublic(a) {
			t.Fatalf("accepted non-public %s in %q", a, raw)
		}
		if w, err := whatwg.Parse(u.Scheme + "://" + u.Host + "/"); err == nil {
			if a, err := netip.ParseAddr(strings.Trim(w.Hostname(), "[]")); err == nil && !IsPublic(a) {
				t.Fatalf("accepted %q, which a browser reads as non-public %s", raw, a)
			}
		}
	})
}
