package crawlstate

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/layout"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/safelog"
)

// An outcome as a group's item holds it: its fields, its write token, and the WARC file it names
// (outcomecode.go writes and reads the compact form).

// stored is an Outcome as its group's item holds it (outcomecode.go has the form it is written
// in; these names are those of the JSON form before it, still read): the state as a letter, the
// page's parts that can be derived left out, and its WARC file's name shortened when it is the
// usual pages/<crawl>/<day>/<batch>.warc.gz (a group's item is billed by its size, a unit a
// kilobyte, and holds up to message.MaxFetchURLs outcomes, a run's). Whether a failure may be
// redriven is the item's x<k> attribute.
type stored struct {
	S string         `json:"s"`
	C errclass.Class `json:"c,omitempty"`
	D string         `json:"d,omitempty"`
	K string         `json:"k,omitempty"` // the WARC file
	B string         `json:"b,omitempty"` // the WARC file, as <day>/<batch> of pages/<crawl>/<day>/<batch>.warc.gz
	O int64          `json:"o,omitempty"` // offset
	L int64          `json:"l,omitempty"` // length
	U string         `json:"u,omitempty"` // the final URL, when not the URL itself
	H int            `json:"h,omitempty"` // HTTP status
	T string         `json:"t,omitempty"` // content type
	F int64          `json:"f,omitempty"` // fetched at, Unix nanoseconds
	P *int           `json:"p,omitempty"` // the parse message's part, when named message.PartName(K, P)
	M string         `json:"m,omitempty"` // the parse message's name otherwise
	// The recrawl's: the validators, the payload digest, and a revisit's reference (recrawl.go).
	E  string             `json:"e,omitempty"`
	LM string             `json:"lm,omitempty"`
	G  string             `json:"g,omitempty"`
	UN *message.Unchanged `json:"un,omitempty"`
	// W is the write's token on an outcome without a page: the tag of the owner that recorded it
	// (writerTag), or a random one (SkipQueued). A write sent again because its answer was lost
	// finds its own outcome by it, where another owner's, the same but for W, is not its own. A
	// fetched outcome needs none: its WARC record's place is its own.
	W string `json:"w,omitempty"`
	// Ref is the id of the WARC file B in the group's item (fileAttr), when the outcome names it so.
	Ref string `json:"-"`
}

// randomTag is a write token of writerTag's size for a write that has no owner.
func randomTag() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24 and later)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// writerTag is an outcome's write token (stored.W) for owner: 8 characters of its tag, 48 bits,
// enough to tell the few owners of one URL apart.
func writerTag(owner string) string {
	if t := ownerTag(owner); len(t) > 8 {
		return t[:8]
	}
	return ownerTag(owner)
}

// stateCodes are the letters of the terminal states in stored.
var stateCodes = map[State]string{Fetched: "f", Skipped: "s", Failed: "x", Stopped: "t"}

// stateOf is the terminal state whose letter in stored is code, or "" for none.
func stateOf(code string) State {
	for state, c := range stateCodes {
		if c == code {
			return state
		}
	}
	return ""
}

// The usual WARC file name, which stored shortens.
const (
	pagesPrefix = layout.Pages
	warcSuffix  = ".warc.gz"
)

// encodeOutcome is o as its group's item holds it, with its WARC file's name in it. token is the
// writer's tag (writerTag), kept on an outcome without a page (stored.W).
func encodeOutcome(crawl string, o Outcome, token string) (string, error) {
	st, err := storedOf(crawl, o, token)
	return st.text(), err
}

// storedOf is o as its group's item holds it (see encodeOutcome).
func storedOf(crawl string, o Outcome, token string) (stored, error) {
	code, ok := stateCodes[o.State]
	if !ok {
		return stored{}, fmt.Errorf("%q is not a terminal state", o.State)
	}
	st := stored{S: code}
	if o.Page == nil {
		st.W = token
	}
	if o.Cause != nil {
		st.C, st.D = errclass.Of(o.Cause), safelog.Truncate(o.Cause.Error())
	}
	if p := o.Page; p != nil {
		st.K, st.O, st.L, st.H, st.T, st.F = p.WARCKey, p.Offset, p.Length, p.Status, p.ContentType, p.FetchedAt.UnixNano()
		if batch := usualBatch(crawl, p.WARCKey); batch != "" {
			st.K, st.B = "", batch
		}
		if p.FinalURL != o.URL {
			st.U = p.FinalURL
		}
		storeRecrawl(&st, p)
		if part, ok := partOf(p.WARCKey, p.Msg); ok {
			st.P = &part
		} else {
			st.M = p.Msg
		}
	}
	return st, nil
}

// usualBatch is the <day>/<batch> of key when it is the usual name of a WARC file of the crawl,
// pages/<crawl>/<day>/<batch>.warc.gz, or "".
func usualBatch(crawl, key string) string {
	if rest, ok := strings.CutPrefix(key, pagesPrefix+crawl+"/"); ok && strings.HasSuffix(rest, warcSuffix) {
		return strings.TrimSuffix(rest, warcSuffix)
	}
	return ""
}

// partOf returns n when msg is message.PartName(file, n).
func partOf(file, msg string) (int, bool) {
	rest, ok := strings.CutPrefix(msg, file+"#")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || message.PartName(file, n) != msg {
		return 0, false
	}
	return n, true
}

// apply sets u, a URL of crawl, from its outcome as its group's item holds it; file is the WARC
// file the outcome names by its id in the item, if it does (fileOf).
func (u *URL) apply(crawl, raw, file string) error {
	st, err := decodeOutcome(raw, file)
	if err != nil {
		return fmt.Errorf("outcome of %s: %w", u.Key, err)
	}
	if u.State = stateOf(st.S); u.State == "" {
		return fmt.Errorf("outcome of %s: unknown state %q", u.Key, st.S)
	}
	u.Class, u.Detail, u.outcome = st.C, st.D, raw
	if st.B != "" {
		st.K = pagesPrefix + crawl + "/" + st.B + warcSuffix
	}
	if st.K != "" {
		p := &Page{WARCKey: st.K, Offset: st.O, Length: st.L, FinalURL: st.U, Status: st.H, ContentType: st.T,
			FetchedAt: time.Unix(0, st.F).UTC(), Msg: st.M}
		if p.FinalURL == "" {
			p.FinalURL = u.URL
		}
		if st.P != nil {
			p.Msg = message.PartName(st.K, *st.P)
		}
		loadRecrawl(p, st)
		u.Page = p
	}
	return nil
}
