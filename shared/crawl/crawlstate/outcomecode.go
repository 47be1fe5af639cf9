package crawlstate

import (
	"crypto/sha256"
	"encoding/ascii85"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
)

// How a group's item holds an outcome (docs/state.md, "A group's item, byte by byte"). A group's
// item is billed a write unit per started kilobyte at every claim and outcome write, and holds up
// to ten outcomes (more for a run), so each outcome is kept short:
//
//	<state letter>, then fields, each "|" <tag> <value>; a "~" or "|" of a value is written "~0" or "~1"
//
// A fetched page's usual WARC file, pages/<crawl>/<day>/<batch>.warc.gz, is held once in the item,
// in the attribute f<id> (fileAttr), and its outcomes name it by id; its fetch time counts from
// that day's start. Numbers are in base 36, the payload digest in Ascii85, the usual content types
// by a code, and a page's usual status (200) is left out. An outcome written before this form is a
// JSON document (stored's names), which starts with "{": both are read.
//
// The tags:
//
//	c class          d detail          w write token (stored.W)
//	f the file's id  b <day>/<batch>   k the file's whole key (not the usual name)
//	o offset         l length          h status (a page's, when not 200)
//	y content type, by its code (contentTypes)               t content type, as sent
//	a fetched at, ns from the file's day (UTC)               A fetched at, Unix ns
//	p parse message part (when not 0)                        m parse message name (not a part)
//	u final URL (when not the URL)
//	e ETag           i Last-Modified, Unix seconds (when http.TimeFormat gives it back)
//	j Last-Modified, as sent
//	g payload digest, sha256 in Ascii85                      G payload digest, as kept
//	n a revisit's reference (message.Unchanged, JSON)
const (
	fieldSep   = '|'
	fileLetter = "f"
	// fileIDLen is the characters of a file's id: base64url of its name's SHA-256. When two files
	// of one item share an id (a chance in 4,096 for two), the later one's outcomes hold the
	// file's name themselves (Record).
	fileIDLen = 2
)

var (
	escaper   = strings.NewReplacer("~", "~0", "|", "~1")
	unescaper = strings.NewReplacer("~0", "~", "~1", "|")
)

// contentTypes are the content types an outcome holds by a code, its index in base 36. The list
// only grows, at its end: an item keeps its codes for as long as it lives.
var contentTypes = []string{
	"text/html; charset=utf-8", "text/html", "text/html; charset=UTF-8", "text/html;charset=UTF-8",
	"text/html;charset=utf-8", "application/xhtml+xml", "text/plain; charset=utf-8", "text/plain",
	"application/pdf", "application/json", "application/xml", "text/xml", "application/rss+xml",
	"application/atom+xml", "text/html; charset=iso-8859-1", "text/html; charset=ISO-8859-1",
}

// fileAttr is the attribute of a group's item that holds the <day>/<batch> of the WARC file id.
func fileAttr(id string) string { return fileLetter + id }

// fileID is the id in a group's item of the usual WARC file <day>/<batch>.
func fileID(batch string) string {
	h := sha256.Sum256([]byte(batch))
	return base64.RawURLEncoding.EncodeToString(h[:])[:fileIDLen]
}

// dayOf is the start (UTC) of the day that a usual WARC file's <day>/<batch> names.
func dayOf(batch string) (time.Time, bool) {
	const layout = "2006/01/02"
	if len(batch) < len(layout) {
		return time.Time{}, false
	}
	t, err := time.Parse(layout, batch[:len(layout)])
	return t, err == nil
}

// hasPage reports whether st names where a page is stored.
func (st stored) hasPage() bool { return st.K != "" || st.B != "" || st.Ref != "" }

// text is st as a group's item holds it (see above). st.Ref, when set, names st.B's file by its id.
func (st stored) text() string {
	var b strings.Builder
	b.WriteString(st.S)
	add := func(tag byte, v string) {
		b.WriteByte(fieldSep)
		b.WriteByte(tag)
		b.WriteString(escaper.Replace(v))
	}
	str := func(tag byte, v string) {
		if v != "" {
			add(tag, v)
		}
	}
	num := func(tag byte, n int64) {
		if n != 0 {
			add(tag, strconv.FormatInt(n, 36))
		}
	}
	str('c', string(st.C))
	str('d', st.D)
	str('w', st.W)
	switch {
	case st.Ref != "":
		add('f', st.Ref)
	case st.B != "":
		add('b', st.B)
	default:
		str('k', st.K)
	}
	num('o', st.O)
	num('l', st.L)
	switch {
	case st.hasPage() && st.H == 0:
		add('h', "0")
	case !st.hasPage() || st.H != http.StatusOK:
		num('h', int64(st.H))
	}
	if i := contentCode(st.T); i >= 0 {
		add('y', strconv.FormatInt(int64(i), 36))
	} else {
		str('t', st.T)
	}
	if day, ok := dayOf(st.B); ok && st.F != 0 {
		add('a', strconv.FormatInt(st.F-day.UnixNano(), 36))
	} else {
		num('A', st.F)
	}
	switch {
	case st.P != nil:
		num('p', int64(*st.P))
	case st.hasPage():
		add('m', st.M) // even empty: a page's outcome without one is part 0
	default:
		str('m', st.M)
	}
	str('u', st.U)
	str('e', st.E)
	if lm, ok := httpDate(st.LM); ok {
		add('i', strconv.FormatInt(lm, 36))
	} else {
		str('j', st.LM)
	}
	if sum, ok := sha256Hex(st.G); ok {
		buf := make([]byte, ascii85.MaxEncodedLen(len(sum)))
		add('g', string(buf[:ascii85.Encode(buf, sum)]))
	} else {
		str('G', st.G)
	}
	if st.UN != nil {
		un, _ := json.Marshal(st.UN) // a struct of strings, numbers and a time: it always marshals
		add('n', string(un))
	}
	return b.String()
}

// contentCode is the index of t in contentTypes, or -1.
func contentCode(t string) int {
	for i, c := range contentTypes {
		if c == t {
			return i
		}
	}
	return -1
}

// httpDate returns the Unix seconds of lm when lm is an HTTP date that http.TimeFormat writes
// back as it is: only then is it kept as a number, since a recrawl sends it back verbatim.
func httpDate(lm string) (int64, bool) {
	if lm == "" {
		return 0, false
	}
	t, err := time.Parse(http.TimeFormat, lm)
	if err != nil || t.UTC().Format(http.TimeFormat) != lm {
		return 0, false
	}
	return t.Unix(), true
}

// sha256Hex returns the bytes of g when g is a SHA-256 in lower-case hex, as warcfile writes it.
func sha256Hex(g string) ([]byte, bool) {
	if len(g) != 2*sha256.Size {
		return nil, false
	}
	b, err := hex.DecodeString(g)
	if err != nil || hex.EncodeToString(b) != g {
		return nil, false
	}
	return b, true
}

// fileRef returns the id of the file an outcome as its group's item holds it names (its f field),
// or "".
func fileRef(raw string) string {
	if raw == "" || raw[0] == '{' {
		return ""
	}
	i := strings.Index(raw, string(fieldSep)+fileLetter)
	if i < 0 {
		return ""
	}
	ref := raw[i+2:]
	if j := strings.IndexByte(ref, fieldSep); j >= 0 {
		ref = ref[:j]
	}
	return ref
}

// decodeOutcome reads an outcome as its group's item holds it, in either form; file is the
// <day>/<batch> its f field names (the item's fileAttr), if it names one.
func decodeOutcome(raw, file string) (stored, error) {
	var st stored
	if strings.HasPrefix(raw, "{") {
		err := json.Unmarshal([]byte(raw), &st)
		return st, err
	}
	fields := strings.Split(raw, string(fieldSep))
	if len(fields[0]) != 1 {
		return stored{}, fmt.Errorf("no state letter in %q", raw)
	}
	st.S = fields[0]
	var rel string
	seen := map[byte]bool{}
	for _, f := range fields[1:] {
		if f == "" {
			return stored{}, fmt.Errorf("an empty field in %q", raw)
		}
		if seen[f[0]] {
			return stored{}, fmt.Errorf("field %q twice in %q", f[:1], raw)
		}
		seen[f[0]] = true
		if err := st.field(f[0], unescaper.Replace(f[1:]), &rel); err != nil {
			return stored{}, fmt.Errorf("field %q: %w", f[:1], err)
		}
	}
	if st.Ref != "" {
		if file == "" {
			return stored{}, fmt.Errorf("its WARC file %q is not in its group's item", st.Ref)
		}
		st.B = file
	}
	if st.hasPage() && !seen['h'] {
		st.H = http.StatusOK
	}
	if st.hasPage() && !seen['m'] && st.P == nil {
		st.P = new(int) // part 0
	}
	if rel != "" {
		day, ok := dayOf(st.B)
		n, err := strconv.ParseInt(rel, 36, 64)
		if !ok || err != nil {
			return stored{}, fmt.Errorf("fetched at %q of file %q", rel, st.B)
		}
		st.F = day.UnixNano() + n
	}
	return st, nil
}

// field sets the field with the tag from its value v; rel keeps the fetch time, read once the file
// is known.
func (st *stored) field(tag byte, v string, rel *string) error {
	num := func(dst *int64) error {
		n, err := strconv.ParseInt(v, 36, 64)
		*dst = n
		return err
	}
	switch tag {
	case 'c':
		st.C = errclass.Class(v)
	case 'd':
		st.D = v
	case 'w':
		st.W = v
	case 'f':
		st.Ref = v
	case 'b':
		st.B = v
	case 'k':
		st.K = v
	case 'o':
		return num(&st.O)
	case 'l':
		return num(&st.L)
	case 'h':
		var h int64
		err := num(&h)
		st.H = int(h)
		return err
	case 'y':
		i, err := strconv.ParseInt(v, 36, 64)
		if err != nil || i < 0 || i >= int64(len(contentTypes)) {
			return fmt.Errorf("no content type of code %q", v)
		}
		st.T = contentTypes[i]
	case 't':
		st.T = v
	case 'a':
		*rel = v
	case 'A':
		return num(&st.F)
	case 'p':
		var p int64
		err := num(&p)
		part := int(p)
		st.P = &part
		return err
	case 'm':
		st.M = v
	case 'u':
		st.U = v
	case 'e':
		st.E = v
	case 'i':
		var lm int64
		if err := num(&lm); err != nil {
			return err
		}
		st.LM = time.Unix(lm, 0).UTC().Format(http.TimeFormat)
	case 'j':
		st.LM = v
	case 'g':
		sum := make([]byte, sha256.Size+4)
		n, _, err := ascii85.Decode(sum, []byte(v), true)
		if err != nil || n != sha256.Size {
			return fmt.Errorf("a digest of %d bytes: %v", n, err)
		}
		st.G = hex.EncodeToString(sum[:n])
	case 'G':
		st.G = v
	case 'n':
		st.UN = new(message.Unchanged)
		return json.Unmarshal([]byte(v), st.UN)
	default:
		return fmt.Errorf("unknown tag")
	}
	return nil
}
