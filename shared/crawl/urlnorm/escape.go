package urlnorm

import "strings"

const upperHex = "0123456789ABCDEF"

// charset is a set of ASCII bytes that may appear unescaped.
type charset [128]bool

func newCharset(extra string) *charset {
	var c charset
	for b := 'a'; b <= 'z'; b++ {
		c[b] = true
		c[b-'a'+'A'] = true
	}
	for b := '0'; b <= '9'; b++ {
		c[b] = true
	}
	for _, b := range "-._~" + "!$&'()*+,;=" + ":@" + extra {
		c[b] = true
	}
	return &c
}

// pathChars are RFC 3986 pchar plus '/'; queryChars add '?'.
var (
	pathChars  = newCharset("/")
	queryChars = newCharset("/?")
)

func unreserved(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' ||
		b == '-' || b == '.' || b == '_' || b == '~'
}

func unhex(b byte) (byte, bool) {
	switch {
	case '0' <= b && b <= '9':
		return b - '0', true
	case 'a' <= b && b <= 'f':
		return b - 'a' + 10, true
	case 'A' <= b && b <= 'F':
		return b - 'A' + 10, true
	}
	return 0, false
}

// validEscape reports whether s[i] is '%' followed by two hex digits.
func validEscape(s string, i int) bool {
	if i+2 >= len(s) {
		return false
	}
	_, ok1 := unhex(s[i+1])
	_, ok2 := unhex(s[i+2])
	return ok1 && ok2
}

// fixPercents encodes every '%' that does not start a valid escape as %25, so that url.Parse
// accepts what browsers accept.
func fixPercents(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && !validEscape(s, i) {
			b.WriteString("%25")
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// normalizeEscapes rewrites an escaped path or query part: valid escapes get upper-case hex, or
// are decoded when they stand for an unreserved character; bytes outside allowed are escaped.
func normalizeEscapes(s string, allowed *charset) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%' && validEscape(s, i):
			hi, _ := unhex(s[i+1])
			lo, _ := unhex(s[i+2])
			v := hi<<4 | lo
			if unreserved(v) {
				b.WriteByte(v)
			} else {
				b.WriteByte('%')
				b.WriteByte(upperHex[v>>4])
				b.WriteByte(upperHex[v&15])
			}
			i += 2
		case c < 128 && allowed[c]:
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(upperHex[c>>4])
			b.WriteByte(upperHex[c&15])
		}
	}
	return b.String()
}
