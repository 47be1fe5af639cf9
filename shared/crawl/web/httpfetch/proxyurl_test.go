package httpfetch

import (
	"strings"
	"testing"

	"github.com/crawlstack/crawlstack/shared/testkit/proxycorpus"
)

// Every malformed proxy URL of the corpus is refused, and no error shows its password.
func TestParseProxyRefusesTheCorpusWithoutThePassword(t *testing.T) {
	bad := proxycorpus.Bad(t)
	for _, raw := range bad {
		u, err := ParseProxy(raw)
		if err == nil {
			t.Errorf("ParseProxy(%q) = %v, want an error", raw, u.Redacted())
			continue
		}
		if strings.Contains(err.Error(), proxycorpus.Marker) {
			t.Errorf("ParseProxy(%q): error %q shows the password", raw, err)
		}
		if !strings.HasPrefix(err.Error(), "proxy ") {
			t.Errorf("ParseProxy(%q): error %q does not start with the proxy's name", raw, err)
		}
	}
}

// Well-formed proxy URLs are accepted as url.Parse reads them, a password with reserved
// characters percent-encoded; the error of a bad one names its scheme, host and port.
func TestParseProxy(t *testing.T) {
	for _, tt := range []struct{ raw, host, port, password string }{
		{"http://proxy.example:3128", "proxy.example", "3128", ""},
		{"http://proxy.example:3128/", "proxy.example", "3128", ""},
		{" https://u:p%40ss%23w%2Frd@10.0.0.1:443 ", "10.0.0.1", "443", "p@ss#w/rd"},
		{"socks5://u:pw@[2001:db8::1]:1080", "2001:db8::1", "1080", "pw"},
	} {
		u, err := ParseProxy(tt.raw)
		if err != nil {
			t.Errorf("ParseProxy(%q): %v", tt.raw, err)
			continue
		}
		pw, _ := u.User.Password()
		if u.Hostname() != tt.host || u.Port() != tt.port || pw != tt.password {
			t.Errorf("ParseProxy(%q) = host %q port %q password %q; want %q %q %q", tt.raw, u.Hostname(), u.Port(), pw, tt.host, tt.port, tt.password)
		}
	}
	for raw, want := range map[string]string{
		"http://bob:123/pw@proxy.example:3128": "proxy http://proxy.example:3128: a path",
		"http://bob:12#pw@proxy.example:3128":  "proxy http://proxy.example:3128: a fragment",
		"ftp://bob:pw@proxy.example:21":        "proxy ftp://proxy.example:21: want an http://",
		"http://bob:pw@proxy.example":          "proxy http://proxy.example:?: want scheme://[user:password@]host:port, with a port",
		"bob:pw@proxy.example:3128":            "proxy (not a URL): not a URL",
	} {
		if _, err := ParseProxy(raw); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("ParseProxy(%q): %v, want an error starting %q", raw, err, want)
		}
	}
}
