package urlnorm

import (
	"net/url"
	"strings"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"already normal", "http://example.com/a?b=c", "http://example.com/a?b=c"},
		{"whitespace", " \t http://example.com/a \n", "http://example.com/a"},
		{"inner newline", "http://exa\nmple.com/a\tb", "http://example.com/ab"},
		{"case of scheme and host", "HTTP://Example.COM/Path", "http://example.com/Path"},
		{"idn host", "http://Bücher.example/", "http://xn--bcher-kva.example/"},
		{"punycode kept", "http://xn--bcher-kva.example/", "http://xn--bcher-kva.example/"},
		{"trailing dot", "http://example.com./", "http://example.com/"},
		{"default http port", "http://example.com:80/", "http://example.com/"},
		{"default https port", "https://example.com:443/", "https://example.com/"},
		{"other port kept", "https://example.com:80/", "https://example.com:80/"},
		{"port leading zeros", "http://example.com:0080/", "http://example.com/"},
		{"empty port", "http://example.com:/", "http://example.com/"},
		{"fragment", "http://example.com/a#top", "http://example.com/a"},
		{"userinfo", "http://user:secret@example.com/", "http://example.com/"},
		{"empty path", "http://example.com", "http://example.com/"},
		{"empty path with query", "http://example.com?a=1", "http://example.com/?a=1"},
		{"dot segments", "http://example.com/a/./b/../c", "http://example.com/a/c"},
		{"dot dot above root", "http://example.com/../../a", "http://example.com/a"},
		{"trailing dot dot", "http://example.com/a/b/..", "http://example.com/a/"},
		{"escaped dot segments", "http://example.com/a/%2E%2e/b", "http://example.com/b"},
		{"hex upper-cased", "http://example.com/%c3%a9?q=%c3%a9", "http://example.com/%C3%A9?q=%C3%A9"},
		{"unreserved decoded", "http://example.com/%41%7e%2D?%61=%62", "http://example.com/A~-?a=b"},
		{"reserved kept escaped", "http://example.com/a%2Fb?x=%26%3D", "http://example.com/a%2Fb?x=%26%3D"},
		{"non-ascii path", "http://example.com/café", "http://example.com/caf%C3%A9"},
		{"non-ascii query", "http://example.com/?q=привет", "http://example.com/?q=%D0%BF%D1%80%D0%B8%D0%B2%D0%B5%D1%82"},
		{"space", "http://example.com/a b?c d", "http://example.com/a%20b?c%20d"},
		{"stray percent", "http://example.com/100%?p=5%", "http://example.com/100%25?p=5%25"},
		{"query order kept", "http://example.com/?b=2&a=1&b=1", "http://example.com/?b=2&a=1&b=1"},
		{"plus kept", "http://example.com/?q=a+b", "http://example.com/?q=a+b"},
		{"session params", "http://example.com/?a=1&JSESSIONID=x&PHPSESSID=y&sid=1&sessionid=2&ASPSESSIONIDQQ=3&b=2", "http://example.com/?a=1&b=2"},
		{"only session param", "http://example.com/p?sid=123", "http://example.com/p"},
		{"empty params", "http://example.com/?a=1&&b=2&", "http://example.com/?a=1&b=2"},
		{"empty query", "http://example.com/?", "http://example.com/"},
		{"jsessionid path param", "http://example.com/shop;jsessionid=ABC123?x=1", "http://example.com/shop?x=1"},
		{"other path params kept", "http://example.com/a;v=1;jsessionid=A/b", "http://example.com/a;v=1/b"},
		{"ipv4", "http://127.0.0.1:8080/", "http://127.0.0.1:8080/"},
		{"ipv6", "http://[2001:DB8:0:0::1]:80/", "http://[2001:db8::1]/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := Normalize(tt.in)
			if err != nil {
				t.Fatalf("Normalize(%q): %v", tt.in, err)
			}
			if got := u.String(); got != tt.want {
				t.Errorf("Normalize(%q) = %q, want %q", tt.in, got, tt.want)
			}
			again, err := Normalize(u.String())
			if err != nil || again.String() != u.String() {
				t.Errorf("not idempotent: Normalize(%q) = %v, %v", u, again, err)
			}
		})
	}
}

func TestNormalizeErrors(t *testing.T) {
	tests := []struct {
		name, in string
		want     errclass.Class
	}{
		{"empty", "", errclass.Parse},
		{"relative", "/a/b", errclass.Parse},
		{"no host", "http:///a", errclass.Parse},
		{"opaque", "http:example.com", errclass.Parse},
		{"ftp", "ftp://example.com/", errclass.Scope},
		{"mailto", "mailto:a@example.com", errclass.Scope},
		{"javascript", "javascript:alert(1)", errclass.Scope},
		{"bad host", "http://exa mple.com/", errclass.Parse},
		{"bad idna", "http://a..b/", errclass.Parse},
		{"underscore host", "http://a_b.example.com/", errclass.Parse},
		{"bad port", "http://example.com:99999/", errclass.Parse},
		{"ipv6 zone", "http://[fe80::1%25eth0]/", errclass.Parse},
		{"control char", "http://example.com/\x00", errclass.Parse},
		{"too long", "http://example.com/" + strings.Repeat("a", MaxLength), errclass.TooLarge},
		{"too long after escaping", "http://example.com/" + strings.Repeat("é", MaxLength/4), errclass.TooLarge},
		{"too long raw", "http://example.com/" + strings.Repeat("%41", maxRawLength), errclass.TooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := Normalize(tt.in)
			if err == nil {
				t.Fatalf("Normalize(%q) = %v, want an error", tt.in, u)
			}
			if got := errclass.Of(err); got != tt.want {
				t.Errorf("Normalize(%q) error %v has class %q, want %q", tt.in, err, got, tt.want)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	base, err := url.Parse("http://example.com/dir/page.html?x=1")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, ref, want string
	}{
		{"relative", "other.html", "http://example.com/dir/other.html"},
		{"parent", "../up.html", "http://example.com/up.html"},
		{"absolute path", "/root", "http://example.com/root"},
		{"query only", "?y=2", "http://example.com/dir/page.html?y=2"},
		{"fragment only", "#frag", "http://example.com/dir/page.html?x=1"},
		{"empty", "", "http://example.com/dir/page.html?x=1"},
		{"scheme relative", "//Other.example/a", "http://other.example/a"},
		{"absolute", "HTTPS://other.example:443/b", "https://other.example/b"},
		{"padded", "  \n next.html\t ", "http://example.com/dir/next.html"},
		{"non-ascii", "страница?q=ü", "http://example.com/dir/%D1%81%D1%82%D1%80%D0%B0%D0%BD%D0%B8%D1%86%D0%B0?q=%C3%BC"},
		{"non-ascii host", "//bücher.example/", "http://xn--bcher-kva.example/"},
		{"stray percent", "50%off", "http://example.com/dir/50%25off"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := Resolve(base, tt.ref)
			if err != nil {
				t.Fatalf("Resolve(%q): %v", tt.ref, err)
			}
			if got := u.String(); got != tt.want {
				t.Errorf("Resolve(%q) = %q, want %q", tt.ref, got, tt.want)
			}
		})
	}
}

func TestResolveErrors(t *testing.T) {
	base, err := url.Parse("http://example.com/")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		base *url.URL
		ref  string
		want errclass.Class
	}{
		{"javascript", base, "javascript:void(0)", errclass.Scope},
		{"javascript upper", base, " JavaScript:void(0)", errclass.Scope},
		{"mailto", base, "mailto:a@example.com", errclass.Scope},
		{"data", base, "data:text/html,hi", errclass.Scope},
		{"tel", base, "tel:+100", errclass.Scope},
		{"ftp", base, "ftp://example.com/f", errclass.Scope},
		{"bad host", base, "http://exa mple.com/", errclass.Parse},
		{"nil base", nil, "/a", errclass.Parse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := Resolve(tt.base, tt.ref)
			if err == nil {
				t.Fatalf("Resolve(%q) = %v, want an error", tt.ref, u)
			}
			if got := errclass.Of(err); got != tt.want {
				t.Errorf("Resolve(%q) error %v has class %q, want %q", tt.ref, err, got, tt.want)
			}
		})
	}
}

func TestKey(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"http://example.com/", "2a1b402420ef46577471cdc7409b0fa2c6a204db316e59ade2d805435489a067"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got := Key(tt.in)
			if got != tt.want {
				t.Errorf("Key(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestRedact(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"http://example.com/a@b", "http://example.com/a@b"},
		{"http://user:secret@example.com/x", "http://example.com/x"},
		{"http://user:secret@example.com:99999/x", "http://example.com:99999/x"},
		{"http://u:p@exa mple.com/?q=a@b", "http://exa mple.com/?q=a@b"},
		{"mailto:a@example.com", "mailto:a@example.com"},
		{"not a url", "not a url"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := Redact(tt.in); got != tt.want {
				t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestErrorsHideCredentials(t *testing.T) {
	for _, in := range []string{"ftp://user:secret@example.com/", "http://user:secret@exa mple.com/", "http://user:secret@example.com:99999/"} {
		t.Run(in, func(t *testing.T) {
			_, err := Normalize(in)
			if err == nil || strings.Contains(err.Error(), "secret") {
				t.Errorf("Normalize(%q) error %v: want an error without the password", in, err)
			}
		})
	}
}

// TestHostCacheAnswersAsTheMapping checks that the cache of normalised hosts returns what the
// mapping itself gives, on the first call and on the cached ones, and never caches a refusal.
func TestHostCacheAnswersAsTheMapping(t *testing.T) {
	for _, h := range []string{"Example.COM", "bücher.example", "xn--bcher-kva.example.", "a_b.example", "", "::1", "127.0.0.1"} {
		want, wantErr := mapHost(h)
		for round := range 3 {
			got, err := normalizeHost(h)
			if got != want || (err != nil) != (wantErr != nil) {
				t.Errorf("round %d: normalizeHost(%q) = %q, %v; mapHost gives %q, %v", round, h, got, err, want, wantErr)
			}
		}
		if _, cached := hosts.Peek(h); cached != (wantErr == nil) {
			t.Errorf("host %q cached = %v, want %v", h, cached, wantErr == nil)
		}
	}
}
