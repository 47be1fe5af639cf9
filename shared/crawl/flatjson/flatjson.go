// Package flatjson reads the flat JSON objects the crawl state is made of (every value a string,
// an integer or a bool) in one pass: the scanner accepts only what is valid JSON, so it needs
// neither encoding/json's separate validating pass nor its reflection. A document it cannot read
// (nested values, fractions, null, anything invalid) is the caller's to hand to encoding/json,
// which reads it or says what is wrong with it.
//
// What it reads, it reads as encoding/json reads it into a map[string]any (with integers as
// int64): the tests hold it to that, with encoding/json as the oracle.
package flatjson

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Object reads doc, a JSON object whose values are all strings, integers that fit an int64, or
// bools. ok is false for any other document, valid or not.
func Object(doc string) (obj map[string]any, ok bool) {
	obj = make(map[string]any, 8)
	if !Members(doc, func(name string, v Value) { obj[name] = v.Any() }) {
		return nil, false
	}
	return obj, true
}

// Value is a member's value: a string, an integer or a bool.
type Value struct {
	kind byte // 's', 'i' or 'b'
	str  string
	num  int64
}

// String returns the value and whether it is a string.
func (v Value) String() (string, bool) { return v.str, v.kind == 's' }

// Any returns the value as encoding/json would put it in a map[string]any, with an integer as
// an int64.
func (v Value) Any() any {
	switch v.kind {
	case 's':
		return v.str
	case 'i':
		return v.num
	}
	return v.num != 0
}

// Members calls fn with each member of doc, in order, and reports whether doc is a flat object
// Object reads; when it is not, fn may have been called with some of its members, which the
// caller must then drop. A name that repeats comes again, as encoding/json would overwrite it.
func Members(doc string, fn func(name string, v Value)) bool {
	i := skipSpace(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return false
	}
	i = skipSpace(doc, i+1)
	if i < len(doc) && doc[i] == '}' {
		return skipSpace(doc, i+1) == len(doc)
	}
	for i < len(doc) {
		name, next, ok := readString(doc, i)
		if !ok {
			return false
		}
		i = skipSpace(doc, next)
		if i >= len(doc) || doc[i] != ':' {
			return false
		}
		if i = skipSpace(doc, i+1); i >= len(doc) {
			return false
		}
		var v Value
		if v, i, ok = value(doc, i); !ok {
			return false
		}
		fn(name, v)
		if i = skipSpace(doc, i); i >= len(doc) {
			return false
		}
		switch doc[i] {
		case '}':
			return skipSpace(doc, i+1) == len(doc)
		case ',':
			i = skipSpace(doc, i+1)
		default:
			return false // such as the '.' of a fraction
		}
	}
	return false
}

// value reads the string, integer or bool that starts at doc[i].
func value(doc string, i int) (v Value, next int, ok bool) {
	switch c := doc[i]; {
	case c == '"':
		s, next, ok := readString(doc, i)
		return Value{kind: 's', str: s}, next, ok
	case hasWord(doc, i, "true"):
		return Value{kind: 'b', num: 1}, i + 4, true
	case hasWord(doc, i, "false"):
		return Value{kind: 'b'}, i + 5, true
	case c == '-' || isDigit(c):
		n, next, ok := integer(doc, i)
		return Value{kind: 'i', num: n}, next, ok
	}
	return Value{}, 0, false
}

func hasWord(doc string, i int, w string) bool {
	return len(doc)-i >= len(w) && doc[i:i+len(w)] == w
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// integer reads the JSON number at doc[i] when it is an integer that fits an int64: JSON allows
// no leading zero and no '+'. A fraction or an exponent (the '.', 'e' or 'E' after the digits) is
// left to the caller's check of what follows a value.
func integer(doc string, i int) (n int64, next int, ok bool) {
	j := i
	if doc[j] == '-' {
		j++
	}
	switch {
	case j >= len(doc) || !isDigit(doc[j]):
		return 0, 0, false
	case doc[j] == '0':
		j++
	default:
		for j < len(doc) && isDigit(doc[j]) {
			j++
		}
	}
	if j < len(doc) && isDigit(doc[j]) {
		return 0, 0, false // a leading zero
	}
	n, err := strconv.ParseInt(doc[i:j], 10, 64)
	if err != nil {
		return 0, 0, false // out of range
	}
	return n, j, true
}

// readString reads the JSON string that starts at doc[i] ('"'), as encoding/json would, and returns
// the index just past it. ok is false for anything that is not a valid JSON string (a control
// character, an escape JSON does not have), and for invalid UTF-8, which encoding/json replaces.
func readString(doc string, i int) (s string, next int, ok bool) {
	if i >= len(doc) || doc[i] != '"' {
		return "", 0, false
	}
	escaped, ascii := false, true
	for j := i + 1; j < len(doc); j++ {
		switch c := doc[j]; {
		case c == '"':
			if escaped {
				s, ok := unescape(doc[i:j+1], ascii)
				return s, j + 1, ok
			}
			if !ascii && !utf8.ValidString(doc[i+1:j]) {
				return "", 0, false
			}
			return doc[i+1 : j], j + 1, true
		case c == '\\':
			n := escapeLen(doc, j)
			if n == 0 {
				return "", 0, false
			}
			escaped, j = true, j+n-1
		case c < 0x20:
			return "", 0, false // JSON has no raw control characters in a string
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", 0, false // no closing quote
}

// escapeLen is the length of the JSON escape at doc[j] ('\\'), or 0 when JSON has no such escape.
func escapeLen(doc string, j int) int {
	if j+1 >= len(doc) {
		return 0
	}
	switch doc[j+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2
	case 'u':
		if j+6 > len(doc) {
			return 0
		}
		for _, h := range []byte(doc[j+2 : j+6]) {
			if !isDigit(h) && (h|0x20 < 'a' || h|0x20 > 'f') {
				return 0
			}
		}
		return 6
	}
	return 0
}

// unescape returns the string of lit, a JSON string literal with escapes that readString has
// checked, as encoding/json reads it. The one-letter escapes are replaced here. A \u escape goes
// to strconv.Unquote, which reads it alike, unless it is half a surrogate pair (which encoding/json
// joins with the next, or replaces with U+FFFD); that, and invalid UTF-8 (which encoding/json
// replaces), go to encoding/json.
func unescape(lit string, ascii bool) (string, bool) {
	valid := ascii || utf8.ValidString(lit)
	if valid && !strings.Contains(lit, `\u`) {
		inner := lit[1 : len(lit)-1]
		var b strings.Builder
		b.Grow(len(inner))
		for {
			k := strings.IndexByte(inner, '\\')
			if k < 0 {
				b.WriteString(inner)
				return b.String(), true
			}
			b.WriteString(inner[:k])
			b.WriteByte(oneLetter[inner[k+1]])
			inner = inner[k+2:]
		}
	}
	if valid {
		if s, err := strconv.Unquote(lit); err == nil {
			return s, true
		}
	}
	var s string
	err := json.Unmarshal([]byte(lit), &s)
	return s, err == nil
}

// oneLetter is the byte each one-letter JSON escape stands for, by the letter.
var oneLetter = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

func skipSpace(doc string, i int) int {
	for i < len(doc) && (doc[i] == ' ' || doc[i] == '\t' || doc[i] == '\n' || doc[i] == '\r') {
		i++
	}
	return i
}
