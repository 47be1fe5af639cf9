package retry

import (
	"testing"
	"time"
)

// FuzzRetryAfter checks that any header value gives a wait within the clamp, never 0.
func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"120", "0", "-1", "Wed, 21 Oct 2015 07:28:00 GMT", "Sunday, 06-Nov-94 08:49:37 GMT",
		"Sun Nov  6 08:49:37 1994", "99999999999999999999", "1e3", " 5 ", ""} {
		f.Add(s)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		const min, max = time.Second, time.Hour
		d, ok := RetryAfter(v, now, min, max)
		if ok && (d < min || d > max) {
			t.Fatalf("RetryAfter(%q) = %v, outside [%v, %v]", v, d, min, max)
		}
		if !ok && d != 0 {
			t.Fatalf("RetryAfter(%q) = %v, false; want 0 when not ok", v, d)
		}
	})
}
