package doctype

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestOf(t *testing.T) {
	for ct, want := range map[string]Kind{"application/pdf": PDF, "application/json; charset=utf-8": JSON, "application/ld+json": JSON,
		"text/plain; charset=iso-8859-1": Text, "TEXT/PLAIN": Text, "text/html": "", "application/octet-stream": "", "image/svg+xml": ""} {
		if got, ok := Of(ct); got != want || ok != (want != "") {
			t.Errorf("Of(%q) = %q, %v; want %q", ct, got, ok, want)
		}
	}
}

// A text body is decoded by its charset to UTF-8 and cut at the cap on a rune's boundary.
func TestPlainText(t *testing.T) {
	latin1 := []byte("caf\xe9 na\xefve")
	got, cut, err := PlainText(latin1, "text/plain; charset=iso-8859-1", 100)
	if err != nil || got != "café naïve" || cut {
		t.Errorf("latin-1: %q, cut %v, %v; want café naïve", got, cut, err)
	}
	long := strings.Repeat("é", 100) // 200 bytes
	got, cut, err = PlainText([]byte(long), "text/plain; charset=utf-8", 51)
	if err != nil || !cut || got != strings.Repeat("é", 25) || !utf8.ValidString(got) {
		t.Errorf("cut at 51 bytes: %q (%d bytes), cut %v, %v; want 25 é", got, len(got), cut, err)
	}
	if got, cut, _ := PlainText([]byte("short"), "text/plain", 5); got != "short" || cut {
		t.Errorf("exactly the cap: %q, cut %v", got, cut)
	}
}
