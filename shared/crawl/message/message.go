// Package message defines the versioned JSON messages that flow between the handlers:
//
//	schedule --Fetch--> fetch --Parse--> parse --Links--> schedule
//
// and schedule --Check--> schedule, a crawl's chain of drain checks (package finish).
//
// Every message carries the schema version V and its Kind. Decoding is strict: unknown fields,
// a wrong version or kind, missing fields, oversized bodies and trailing data are errors of class
// errclass.Poison, so a handler can quarantine the message and go on with the rest of its batch.
//
// Two schema versions are read side by side: Version, which this code writes, and the one before
// it (Oldest), which Decode upgrades first (upgrade.go). Messages written before a deploy are so
// still read after it; a message of a newer version (written by a newer deploy) or of an older
// one is quarantined with a reason that says which.
package message

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
)

// Version is the schema version this code writes. Version 2 names a fetch target's group
// "group" (version 1 wrote "g"; upgrade.go).
const Version = 2

// Oldest is the oldest schema version this code reads: a message of Oldest is upgraded to
// Version as it is decoded, and is written as Version if it is sent again.
const Oldest = Version - 1

// MaxBytes bounds an encoded message: SQS's classic limit of 256 KiB.
const MaxBytes = 256 * 1024

// MaxLinks bounds the URLs in one Links message; Split packs longer lists into several.
const MaxLinks = 200

// Kind names a message type.
type Kind string

// The message kinds.
const (
	KindLinks Kind = "links"
	KindFetch Kind = "fetch"
	KindParse Kind = "parse"
	// KindCheck is a crawl's drain check, on the schedule queue (see Check).
	KindCheck Kind = "check"
)

// Header is what every message starts with.
type Header struct {
	V     int    `json:"v"`
	Kind  Kind   `json:"kind"`
	Crawl string `json:"crawl"`
}

// Links asks schedule to admit URLs discovered at one depth: seed lines (Depth 0, Root empty:
// each URL is its own scope root) or the out-links of a parsed page.
type Links struct {
	Header
	// Root is the seed URL whose scope these links are checked against; empty for seeds.
	Root string `json:"root,omitempty"`
	// Parent is the page the links were found on (empty for seeds).
	Parent string `json:"parent,omitempty"`
	// Depth is the depth of the URLs in this message (seeds are 0).
	Depth int      `json:"depth"`
	URLs  []string `json:"urls"`
	// Sitemap marks URLs that are sitemaps (or a robots.txt read for its Sitemap: lines), to be
	// fetched and read as such, not as pages.
	Sitemap bool `json:"sitemap,omitempty"`
	// LastMod, when set, holds a sitemap's lastmod of each URL, in Unix seconds (0: none), in the
	// order of URLs: a recrawl need not ask again for a page not modified since its previous
	// crawl got it (shared/crawl/recrawl).
	LastMod []int64 `json:"lastMod,omitempty"`
}

// LastModAt is the lastmod of the i-th URL; zero when it has none.
func (m *Links) LastModAt(i int) time.Time {
	if i >= len(m.LastMod) || m.LastMod[i] <= 0 {
		return time.Time{}
	}
	return time.Unix(m.LastMod[i], 0).UTC()
}

// Ref addresses one record inside a WARC file in the blob store.
type Ref struct {
	Key    string `json:"key"`
	Offset int64  `json:"offset"`
	Length int64  `json:"length"`
}

// Check asks schedule to look whether its crawl has drained, and to announce its end once it has
// (package finish). A crawl has one chain of checks: each check that finds work left sends the
// next, Seq+1, with a delay; a copy of a check whose Seq the chain has passed is dropped.
type Check struct {
	Header
	Seq int `json:"seq"`
	// WaitMs is the delay the check was sent with (ms; 0 in checks sent before it was recorded):
	// a paused crawl's next check waits twice as long (package finish).
	WaitMs int64 `json:"waitMs,omitempty"`
}

func (m *Check) validate() error {
	if m.Seq < 0 {
		return fmt.Errorf("negative seq %d", m.Seq)
	}
	if m.WaitMs < 0 {
		return fmt.Errorf("negative wait %d ms", m.WaitMs)
	}
	return nil
}

// Encode marshals m (a Links, Fetch, Parse or Check, or a pointer to one), setting V and Kind.
func Encode(m any) (string, error) {
	switch v := m.(type) {
	case Links:
		v.V, v.Kind = Version, KindLinks
		return marshal(v)
	case *Links:
		return Encode(*v)
	case Fetch:
		v.V, v.Kind = Version, KindFetch
		return marshal(v)
	case *Fetch:
		return Encode(*v)
	case Parse:
		v.V, v.Kind = Version, KindParse
		return marshal(v)
	case *Parse:
		return Encode(*v)
	case Check:
		v.V, v.Kind = Version, KindCheck
		return marshal(v)
	case *Check:
		return Encode(*v)
	}
	return "", fmt.Errorf("encode message: unsupported type %T", m)
}

func marshal(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // '&' in a query stays one byte: message sizes are what SplitLinks counts
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("encode message: %w", err)
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if len(b) > MaxBytes {
		return "", fmt.Errorf("encode message: %d bytes, over the %d-byte limit", len(b), MaxBytes)
	}
	return string(b), nil
}

// Decode parses body as the message kind the caller expects and validates it. It returns
// *Links, *Fetch, *Parse or *Check. Every error has class errclass.Poison.
func Decode(body string, want Kind) (any, error) {
	if len(body) > MaxBytes {
		return nil, poison("message is %d bytes, over the %d-byte limit", len(body), MaxBytes)
	}
	m := newMessage(want)
	if m == nil {
		return nil, poison("unknown kind %q", want)
	}
	// One strict pass decodes a good message of this version. Only a message it refuses, or one
	// of another version, is read again for its header, so that the error names a wrong version
	// or kind before an unknown field; a message of the version before is upgraded and decoded
	// again.
	dec, decErr := strictDecode(body, m)
	h := m.header()
	if decErr != nil || h.V != Version {
		h = Header{}
		if err := json.Unmarshal([]byte(body), &h); err != nil {
			return nil, poison("not a JSON message: %v", err)
		}
	}
	if err := checkHeader(h, want); err != nil {
		return nil, err
	}
	if h.V != Version {
		up, err := upgrade(want, h.V, body)
		if err != nil {
			return nil, poison("upgrade %s message of schema version %d: %v", want, h.V, err)
		}
		m = newMessage(want)
		dec, decErr = strictDecode(up, m)
	}
	if decErr != nil {
		return nil, poison("decode %s message: %v", want, decErr)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, poison("not a JSON message: trailing data after the %s message", want)
	}
	if err := m.validate(); err != nil {
		return nil, poison("invalid %s message: %v", want, err)
	}
	return m, nil
}

// decoded is what Decode decodes a message into.
type decoded interface {
	header() Header
	validate() error
}

// newMessage is an empty message of kind k; nil for no kind.
func newMessage(k Kind) decoded {
	switch k {
	case KindLinks:
		return &Links{}
	case KindFetch:
		return &Fetch{}
	case KindParse:
		return &Parse{}
	case KindCheck:
		return &Check{}
	}
	return nil
}

// strictDecode decodes body into m, refusing unknown fields; it returns the decoder, to look for
// trailing data.
func strictDecode(body string, m any) (*json.Decoder, error) {
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	return dec, dec.Decode(m)
}

func (h Header) header() Header { return h }

func checkHeader(h Header, want Kind) error {
	switch {
	case h.V > Version:
		return poison("schema version %d, written by a newer version of the crawler (this one reads %d and %d): deploy the new version everywhere (every function, and every crawl run that shares the queues), then send the quarantined body back to its queue",
			h.V, Oldest, Version)
	case h.V < Oldest:
		return poison("schema version %d, written by a version of the crawler two or more schema versions old (this one reads %d and %d): no deploy reads it any more; crawl the URLs again",
			h.V, Oldest, Version)
	}
	if h.Kind != want {
		return poison("kind %q, want %q", h.Kind, want)
	}
	if h.Crawl == "" || len(h.Crawl) > 128 {
		return poison("crawl id missing or over 128 bytes")
	}
	return nil
}

// DecodeLinks is Decode for a Links message.
func DecodeLinks(body string) (*Links, error) {
	m, err := Decode(body, KindLinks)
	if err != nil {
		return nil, err
	}
	return m.(*Links), nil
}

// DecodeFetch is Decode for a Fetch message.
func DecodeFetch(body string) (*Fetch, error) {
	m, err := Decode(body, KindFetch)
	if err != nil {
		return nil, err
	}
	return m.(*Fetch), nil
}

// DecodeParse is Decode for a Parse message.
func DecodeParse(body string) (*Parse, error) {
	m, err := Decode(body, KindParse)
	if err != nil {
		return nil, err
	}
	return m.(*Parse), nil
}

func (m *Links) validate() error {
	if len(m.URLs) == 0 {
		return errors.New("no urls")
	}
	if len(m.URLs) > MaxLinks {
		return fmt.Errorf("%d urls, over the limit of %d", len(m.URLs), MaxLinks)
	}
	if m.Depth < 0 {
		return fmt.Errorf("negative depth %d", m.Depth)
	}
	if m.Depth > 0 && m.Root == "" {
		return errors.New("links below depth 0 need a root")
	}
	if len(m.LastMod) > 0 && len(m.LastMod) != len(m.URLs) {
		return fmt.Errorf("%d lastmod values for %d urls", len(m.LastMod), len(m.URLs))
	}
	return nil
}

func (m *Parse) validate() error {
	if len(m.Pages) == 0 {
		if m.File != "" || m.Part != 0 {
			return errors.New("a file with no pages")
		}
		_, pages := m.PageList()
		return pages[0].validate(m.WARC.Key)
	}
	switch {
	case m.URL != "" || m.FinalURL != "" || m.WARC != (Ref{}):
		return errors.New("both one page and a list of pages")
	case len(m.Pages) > MaxPages:
		return fmt.Errorf("%d pages, over the limit of %d", len(m.Pages), MaxPages)
	case m.Part < 0:
		return fmt.Errorf("negative part %d", m.Part)
	}
	for i, p := range m.Pages {
		if err := p.validate(m.File); err != nil {
			return fmt.Errorf("page %d: %w", i, err)
		}
	}
	return nil
}

func (p Page) validate(file string) error {
	switch {
	case p.URL == "" || p.FinalURL == "":
		return errors.New("no url or final url")
	case p.Root == "":
		return errors.New("no root")
	case p.Depth < 0:
		return errors.New("negative depth")
	case file == "" || p.Offset < 0 || p.Length <= 0:
		return errors.New("no warc location")
	case p.Rendered != nil && (p.Rendered.Key == "" || p.Rendered.Offset < 0 || p.Rendered.Length <= 0):
		return errors.New("no warc location of the rendered page")
	case p.Rendered != nil && p.Unchanged != nil:
		return errors.New("a page both rendered and unchanged")
	}
	return nil
}

func poison(format string, args ...any) error {
	return errclass.Errorf(errclass.Poison, format, args...)
}

// MaxLinksBytes bounds the URL bytes of one Links message, so that a batch of 10 such messages
// stays under SQS's 256 KiB limit on a whole SendMessageBatch call.
const MaxLinksBytes = 24 * 1024

// SplitLinks packs urls into Links messages of at most MaxLinks URLs and MaxLinksBytes URL bytes
// each, all sharing tmpl's header, root, parent and depth.
func SplitLinks(tmpl Links, urls []string) []Links {
	return SplitLinksLastMod(tmpl, urls, nil)
}

// lastModBytes is the most a lastmod value takes in a message: ten digits and a comma.
const lastModBytes = 11

// SplitLinksLastMod is SplitLinks with each URL's lastmod (Links.LastMod; nil: none), split
// along.
func SplitLinksLastMod(tmpl Links, urls []string, lastMod []int64) []Links {
	var out []Links
	extra := 0
	if lastMod != nil {
		extra = lastModBytes
	}
	for len(urls) > 0 {
		n, size := 0, 0
		for n < len(urls) && n < MaxLinks && (n == 0 || size+len(urls[n])+3+extra <= MaxLinksBytes) {
			size += jsonLen(urls[n]) + 3 + extra // the quotes and the comma around each URL
			n++
		}
		m := tmpl
		m.URLs = urls[:n:n]
		if lastMod != nil {
			m.LastMod, lastMod = lastMod[:n:n], lastMod[n:]
		}
		out = append(out, m)
		urls = urls[n:]
	}
	return out
}

// jsonLen is the length of s as a JSON string body, as Encode writes it (no HTML escaping).
func jsonLen(s string) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			n++
		case c < 0x20:
			n += 5 // \u00XX
		}
	}
	return n
}

// ByCrawl groups a batch's items by the crawl they belong to, keeping the order in which each
// crawl first appears: a handler stores one object per crawl and batch.
func ByCrawl[T any](items []T, crawl func(T) string) (order []string, groups map[string][]T) {
	groups = map[string][]T{}
	for _, it := range items {
		c := crawl(it)
		if _, ok := groups[c]; !ok {
			order = append(order, c)
		}
		groups[c] = append(groups[c], it)
	}
	return order, groups
}

// EachCrawl calls store with each crawl's items in turn (ByCrawl's groups, in its order), and
// returns what the calls return, joined: a handler's failed records.
func EachCrawl[T, F any](items []T, crawl func(T) string, store func(crawl string, items []T) []F) []F {
	order, groups := ByCrawl(items, crawl)
	var failed []F
	for _, c := range order {
		failed = append(failed, store(c, groups[c])...)
	}
	return failed
}

// DecodeCheck is Decode for a Check message.
func DecodeCheck(body string) (*Check, error) {
	m, err := Decode(body, KindCheck)
	if err != nil {
		return nil, err
	}
	return m.(*Check), nil
}
