package urlnorm

import (
	"net/url"
	"testing"
	"unicode/utf8"
)

// FuzzNormalize checks that Normalize never panics, respects MaxLength, returns valid UTF-8 and
// is idempotent; and that Resolve of the same input against a base gives a normalised URL.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{
		"http://example.com/", "HTTP://User:Pw@Bücher.Example:80/a/./b/../c?sid=1&q=é#f",
		"https://[::1]:443/%2e%2E/%zz?a=1&&b", "http://a.com/x;jsessionid=1;v=2/..;/y",
		" http://example.com/a b\t", "http://xn--bcher-kva.example./%7Euser?%41=%2f",
	} {
		f.Add(s)
	}
	base, err := url.Parse("http://example.com/dir/page?x=1")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if r, err := Resolve(base, raw); err == nil {
			checkNormal(t, raw, r.String())
		}
		if u, err := Normalize(raw); err == nil {
			checkNormal(t, raw, u.String())
		}
	})
}

// checkNormal fails unless s, the result of normalising or resolving raw, is a fixed point of
// Normalize within the bounds.
func checkNormal(t *testing.T, raw, s string) {
	t.Helper()
	if len(s) > MaxLength {
		t.Fatalf("%q gave %d bytes, over MaxLength", raw, len(s))
	}
	if !utf8.ValidString(s) {
		t.Fatalf("%q gave %q, not valid UTF-8", raw, s)
	}
	again, err := Normalize(s)
	if err != nil {
		t.Fatalf("%q gave %q, which fails to normalise: %v", raw, s, err)
	}
	if again.String() != s {
		t.Fatalf("not idempotent: %q -> %q -> %q", raw, s, again.String())
	}
	if k := Key(s); len(k) != 64 {
		t.Fatalf("Key(%q) has %d chars", s, len(k))
	}
}
