package seeds

import (
	"bytes"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
)

// FuzzScan checks that Scan never panics or fails on in-memory input, that line numbers only
// grow, that every seed is normalised, and that bad lines keep their text short.
func FuzzScan(f *testing.F) {
	f.Add([]byte("# c\n\nhttp://a.example/\r\n  https://b.example/x  \n"), 0)
	f.Add([]byte("\xEF\xBB\xBFhttp://a.example/\nnot a url\nftp://x/\n"), 0)
	f.Add([]byte("http://a.example/0123456789\nhttp://b.example/"), 16)
	f.Fuzz(func(t *testing.T, in []byte, maxLine int) {
		if maxLine > 1<<16 {
			maxLine = 1 << 16
		}
		last := 0
		err := Scan(bytes.NewReader(in), maxLine, func(s Seed) error {
			if s.Line <= last {
				t.Fatalf("seed line %d after line %d", s.Line, last)
			}
			last = s.Line
			u, err := urlnorm.Normalize(s.URL.String())
			if err != nil || u.String() != s.URL.String() {
				t.Fatalf("seed %q is not normalised: %v, %v", s.URL, u, err)
			}
			return nil
		}, func(e LineError) {
			if e.Line <= last {
				t.Fatalf("bad line %d after line %d", e.Line, last)
			}
			last = e.Line
			if len(e.Text) > maxText+3 || e.Err == nil {
				t.Fatalf("bad line %+v: text over %d bytes or no error", e, maxText)
			}
		})
		if err != nil {
			t.Fatalf("Scan of an in-memory file: %v", err)
		}
	})
}
