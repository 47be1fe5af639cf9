package urlnorm

import (
	"testing"
	"unicode/utf8"
)

// FuzzNormalize checks that Normalize never panics, respects MaxLength, returns valid UTF-8 and
// is idempotent.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{
		"http://example.com/", "HTTP://User:Pw@Bücher.Example:80/a/./b/../c?sid=1&q=é#f",
		"https://[::1]:443/%2e%2E/%zz?a=1&&b", "http://a.com/x;jsessionid=1;v=2/..;/y",
		" http://example.com/a b\t", "http://xn--bcher-kva.example./%7Euser?%41=%2f",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := Normalize(raw)
		if err != nil {
			return
		}
		s := u.String()
		if len(s) > MaxLength {
			t.Fatalf("Normalize(%q) = %d bytes, over MaxLength", raw, len(s))
		}
		if !utf8.ValidString(s) {
			t.Fatalf("Normalize(%q) = %q, not valid UTF-8", raw, s)
		}
		again, err := Normalize(s)
		if err != nil {
			t.Fatalf("Normalize(%q) = %q, which fails again: %v", raw, s, err)
		}
		if again.String() != s {
			t.Fatalf("not idempotent: %q -> %q -> %q", raw, s, again.String())
		}
		if k := Key(s); len(k) != 64 {
			t.Fatalf("Key(%q) has %d chars", s, len(k))
		}
	})
}
