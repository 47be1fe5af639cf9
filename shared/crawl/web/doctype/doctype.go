// Package doctype names the kinds of response that a crawl parses besides HTML, when its spec
// opts in (crawlspec's parse key): PDF, JSON and plain text. It tells a media type's kind, the
// media types each kind covers (which fetch stores as it stores a kept type), and the plain text
// of a text/plain body, decoded to UTF-8 and capped.
package doctype

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
)

// Kind is a kind of response parsed besides HTML.
type Kind string

// The kinds a spec's parse key lists.
const (
	PDF  Kind = "pdf"
	JSON Kind = "json"
	Text Kind = "text"
)

// Kinds are every kind, in the order the docs list them.
var Kinds = []Kind{PDF, JSON, Text}

// Parse reads a kind's name as a spec gives it.
func Parse(name string) (Kind, error) {
	for _, k := range Kinds {
		if string(k) == name {
			return k, nil
		}
	}
	return "", fmt.Errorf("%q: want one of pdf, json and text", name)
}

// MediaTypes are the media types of kind k, as crawlspec.Keeps matches them: a type, or
// "type/*+suffix" for every type of that structured-syntax suffix (RFC 6839).
func MediaTypes(k Kind) []string {
	switch k {
	case PDF:
		return []string{"application/pdf"}
	case JSON:
		return []string{"application/json", "text/json", "application/*+json"}
	case Text:
		return []string{"text/plain"}
	}
	return nil
}

// Of is the kind of the media type of contentType (a Content-Type header's value), and false for
// a type of no kind (HTML among them).
func Of(contentType string) (Kind, bool) {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		mt = strings.ToLower(strings.TrimSpace(strings.SplitN(contentType, ";", 2)[0]))
	}
	for _, k := range Kinds {
		if Matches(MediaTypes(k), mt) {
			return k, true
		}
	}
	return "", false
}

// Matches reports whether the media type mt is one of types: the type itself, its "type/*", or
// for "type/*+suffix" a type of that type and suffix.
func Matches(types []string, mt string) bool {
	typ, sub, _ := strings.Cut(mt, "/")
	for _, t := range types {
		if t == mt || t == typ+"/*" {
			return true
		}
		if suffix, ok := strings.CutPrefix(t, typ+"/*+"); ok && strings.HasSuffix(sub, "+"+suffix) {
			return true
		}
	}
	return false
}

// MaxTextBytes bounds the text a record holds of a page: a PDF's text, a plain-text page's body.
// The rest is cut, at a UTF-8 boundary, and the record says so (textTruncated).
const MaxTextBytes = 64 << 10

// PlainText is the text of a text/plain body served with contentType, decoded to UTF-8 by its
// charset (UTF-8 when it names none and the body is not marked otherwise), with at most n bytes
// kept: truncated says that some were cut.
func PlainText(body []byte, contentType string, n int) (text string, truncated bool, err error) {
	r, err := charset.NewReader(bytes.NewReader(body), contentType)
	if err != nil {
		return "", false, fmt.Errorf("decode the text: %w", err)
	}
	// One byte past the cap says whether there was more; the cap bounds what is decoded.
	b, err := io.ReadAll(io.LimitReader(r, int64(n)+utf8.UTFMax))
	if err != nil {
		return "", false, fmt.Errorf("decode the text: %w", err)
	}
	s, cut := Cut(string(b), n)
	return s, cut, nil
}

// Cut keeps at most max bytes of s, on a UTF-8 boundary, and says whether it cut any.
func Cut(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	s = s[:n]
	for len(s) > 0 {
		if r, size := utf8.DecodeLastRuneInString(s); r != utf8.RuneError || size > 1 {
			break
		}
		s = s[:len(s)-1] // a rune cut in two
	}
	return s, true
}
