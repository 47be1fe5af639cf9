// Package seeds reads seed files: text with one URL per line, the input that starts a crawl.
//
// Blank lines and lines whose first non-blank character is '#' are ignored. A UTF-8 byte-order
// mark at the start and CRLF line ends are accepted, and surrounding whitespace is trimmed. Each
// URL is normalised with urlnorm.Normalize. A bad line (an invalid URL, or one longer than the
// line limit) is reported and skipped: one typo never stops a crawl of a million seeds. Only a
// read error or the caller's own error ends a scan early.
package seeds

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
)

// DefaultMaxLine is the line limit in bytes when Scan is given 0.
const DefaultMaxLine = 8192

// maxText is how many bytes of a bad line a LineError keeps.
const maxText = 200

// Seed is one valid seed line.
type Seed struct {
	// Line is the 1-based line number in the file.
	Line int
	// URL is the normalised URL.
	URL *url.URL
}

// LineError is a seed line that was skipped, and why.
type LineError struct {
	// Line is the 1-based line number in the file.
	Line int
	// Text is the start of the line (at most about 200 bytes), for the error report, with any
	// credentials (user:password@) removed.
	Text string
	// Err is the reason, classified with errclass (Parse, Scope or TooLarge).
	Err error
}

func (e LineError) Error() string { return fmt.Sprintf("line %d: %q: %v", e.Line, e.Text, e.Err) }

// Unwrap returns the reason, so errclass.Of and errors.Is see it.
func (e LineError) Unwrap() error { return e.Err }

// Scan reads seed lines from r and calls fn with each valid seed and bad (if not nil) with each
// bad line, in file order. Lines longer than maxLine bytes (DefaultMaxLine if maxLine <= 0) are
// bad lines. Scan returns a read error or fn's error, wrapped, and stops there; otherwise nil.
func Scan(r io.Reader, maxLine int, fn func(Seed) error, bad func(LineError)) error {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	br := bufio.NewReader(r)
	for n := 1; ; n++ {
		line, tooLong, err := readLine(br, maxLine)
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read seeds line %d: %w", n, err)
		}
		if n == 1 {
			line = bytes.TrimPrefix(line, []byte("\xEF\xBB\xBF"))
		}
		text := strings.TrimSpace(string(line))
		switch {
		case tooLong:
			report(bad, n, text, errclass.Errorf(errclass.TooLarge, "line over %d bytes", maxLine))
		case text == "" || strings.HasPrefix(text, "#"):
		default:
			u, nerr := urlnorm.Normalize(text)
			if nerr != nil {
				report(bad, n, text, nerr)
				break
			}
			if ferr := fn(Seed{Line: n, URL: u}); ferr != nil {
				return fmt.Errorf("seed line %d: %w", n, ferr)
			}
		}
		if err != nil { // io.EOF
			return nil
		}
	}
}

// Parse reads a whole seed file and returns its seeds and bad lines. The error is a read error.
func Parse(r io.Reader) ([]Seed, []LineError, error) {
	var (
		good []Seed
		bad  []LineError
	)
	err := Scan(r, 0, func(s Seed) error {
		good = append(good, s)
		return nil
	}, func(e LineError) { bad = append(bad, e) })
	return good, bad, err
}

func report(bad func(LineError), n int, text string, err error) {
	if bad == nil {
		return
	}
	text = urlnorm.Redact(text)
	if len(text) > maxText {
		text = strings.ToValidUTF8(text[:maxText], "") + "..."
	}
	bad(LineError{Line: n, Text: text, Err: err})
}

// readLine returns the next line without its "\n" or "\r\n", keeping at most max+1 bytes of it
// in memory; tooLong reports a longer line. err is io.EOF at the end of the input.
func readLine(br *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		chunk, rerr := br.ReadSlice('\n')
		if len(line) <= max {
			line = append(line, chunk...)
		} else {
			tooLong = true
		}
		if errors.Is(rerr, bufio.ErrBufferFull) {
			continue
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) > max {
			tooLong = true
		}
		return line, tooLong, rerr
	}
}
