// Package seeds reads seed files: text with one URL per line, the input that starts a crawl.
//
// Blank lines and lines whose first non-blank character is '#' are ignored, and so is a trailing
// comment: a '#' after whitespace, with the rest of its line ("https://example.com/  # home"). A
// '#' with no whitespace before it is the URL's fragment. A UTF-8 byte-order mark at the start and
// CRLF line ends are accepted, and surrounding whitespace is trimmed. Each URL is normalised with
// urlnorm.Normalize; a line with no scheme ("example.com/a", "127.0.0.1:8080/") is bad, and its
// error says how to write it. A bad line (an invalid URL, or one longer than the
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
		text := withoutComment(strings.TrimSpace(string(line)))
		switch {
		case tooLong:
			report(bad, n, text, errclass.Errorf(errclass.TooLarge, "line over %d bytes", maxLine))
		case text == "" || strings.HasPrefix(text, "#"):
		default:
			u, nerr := urlnorm.Normalize(text)
			if nerr != nil {
				report(bad, n, text, withSchemeHint(text, nerr))
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

// withoutComment is text without a trailing comment: a '#' after whitespace, and what follows.
func withoutComment(text string) string {
	for i := 1; i < len(text); i++ {
		if text[i] == '#' && (text[i-1] == ' ' || text[i-1] == '\t') {
			return strings.TrimSpace(text[:i])
		}
	}
	return text
}

// withSchemeHint is err, the reason text is not a seed, or for a text with no scheme an error that
// says how to write it: a seed is an absolute http or https URL, and "host:port/path" parses as a
// scheme and an opaque rest, or not at all.
func withSchemeHint(text string, err error) error {
	if strings.Contains(text, "://") || strings.ContainsAny(text, " \t") || (errclass.Of(err) != errclass.Parse && otherScheme(text)) {
		return err // a URL, words, or another scheme ("mailto:"), whose error says what is wrong
	}
	return errclass.Errorf(errclass.Parse, "no scheme: write https://%s (or http://)", redact(text))
}

// otherScheme reports whether text starts with a scheme written without "//" that is no host's
// name: mailto:, tel:, javascript:, data:, urn:.
func otherScheme(text string) bool {
	scheme, _, ok := strings.Cut(text, ":")
	switch strings.ToLower(scheme) {
	case "mailto", "tel", "javascript", "data", "urn", "news", "sms":
		return ok
	}
	return false
}

// userinfo reports whether text, with no scheme, starts with credentials ("bob:pw@host/").
func userinfo(text string) bool {
	at := strings.IndexByte(text, '@')
	return at > 0 && !strings.ContainsAny(text[:at], "/?#")
}

// redact is text without the password of its credentials, with or without a scheme: urlnorm.Redact
// finds credentials only after "scheme://".
func redact(text string) string {
	if strings.Contains(text, "://") || !userinfo(text) {
		return urlnorm.Redact(text)
	}
	return strings.TrimPrefix(urlnorm.Redact("http://"+text), "http://")
}

func report(bad func(LineError), n int, text string, err error) {
	if bad == nil {
		return
	}
	text = redact(text)
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
