// Package links extracts what the crawler needs from an HTML page: its title, the links to
// follow (a, area, link rel=canonical, meta refresh), and the robots directives of the page
// (meta robots and the X-Robots-Tag header).
//
// Extraction streams through golang.org/x/net/html's tokenizer (no DOM is built, so deep nesting
// costs nothing) after decoding the body to UTF-8 with golang.org/x/net/html/charset, which reads
// a byte-order mark, the Content-Type charset, then <meta charset> and <meta http-equiv>.
//
// Every href is resolved with urlnorm.Resolve against the page URL, or against the first
// <base href> once it has been seen (a base element belongs in the head, before any link).
// Non-ASCII hrefs therefore end percent-encoded as UTF-8, including in the query; browsers would
// encode a query in the page's charset, but one canonical form matters more to deduplication.
// Hrefs that are invalid or not http(s) (javascript:, mailto: ...) are skipped and counted in
// Page.Skipped. Links are deduplicated by normalised URL and capped at Options.MaxLinks.
package links

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
	"golang.org/x/text/transform"
)

// Where a Link was found.
const (
	SourceA         = "a"         // <a href>
	SourceArea      = "area"      // <area href>
	SourceCanonical = "canonical" // <link rel="canonical" href>
	SourceRefresh   = "refresh"   // <meta http-equiv="refresh" content="0; url=...">
)

// Link is one outgoing link of a page.
type Link struct {
	// URL is the normalised absolute URL.
	URL string
	// NoFollow is set when the element has rel="nofollow" (and no other element with the same
	// URL lacks it). A page-wide nofollow is reported in Page.NoFollow, not here.
	NoFollow bool
	// Source is where the link was found: one of the Source constants.
	Source string
}

// Page is what Extract found in one HTML page.
type Page struct {
	// Title is the first <title>, whitespace collapsed and cut to Options.MaxTitleBytes.
	Title string
	// Links are the distinct links, in document order, at most Options.MaxLinks.
	Links []Link
	// Canonical is the normalised URL of the first <link rel="canonical">, or "".
	Canonical string
	// NoIndex and NoFollow are the page's meta robots directives ("none" sets both).
	NoIndex, NoFollow bool
	// Charset is the name of the encoding the body was decoded from, such as "utf-8".
	Charset string
	// Truncated is set when links beyond MaxLinks were dropped.
	Truncated bool
	// Skipped counts hrefs that were invalid or not http(s), and so were left out.
	Skipped int
}

// Options bound the extraction. Zero values take the defaults.
type Options struct {
	// MaxLinks caps Page.Links. Default 1000.
	MaxLinks int
	// MaxTitleBytes caps Page.Title. Default 512.
	MaxTitleBytes int
	// UserAgentToken is the crawler's product token: <meta name="token"> applies like
	// <meta name="robots">.
	UserAgentToken string
}

// The defaults of Options.
const (
	DefaultMaxLinks      = 1000
	DefaultMaxTitleBytes = 512
)

// Extract parses body, an HTML document served with the Content-Type contentType from pageURL.
// An empty contentType is taken as HTML. A Content-Type that is not HTML or XHTML gives an error
// of class Type; a nil pageURL or a tokenizer failure gives class Parse. Malformed HTML is not
// an error: it is read as browsers read it.
func Extract(body []byte, contentType string, pageURL *url.URL, opts Options) (Page, error) {
	if pageURL == nil {
		return Page{}, errclass.Errorf(errclass.Parse, "extract links: nil page url")
	}
	if err := checkType(contentType); err != nil {
		return Page{}, err
	}
	if opts.MaxLinks <= 0 {
		opts.MaxLinks = DefaultMaxLinks
	}
	if opts.MaxTitleBytes <= 0 {
		opts.MaxTitleBytes = DefaultMaxTitleBytes
	}
	prefix := body
	if len(prefix) > 1024 {
		prefix = prefix[:1024]
	}
	enc, name, _ := charset.DetermineEncoding(prefix, contentType)
	x := &extractor{
		opts: opts,
		base: pageURL,
		page: Page{Charset: name},
		seen: make(map[string]int),
	}
	var r io.Reader = bytes.NewReader(body)
	if name != "utf-8" || !utf8.Valid(body) { // valid UTF-8 needs no decoding: skip the copy
		r = transform.NewReader(r, enc.NewDecoder())
	}
	z := html.NewTokenizer(r)
	if err := x.run(z); err != nil {
		return Page{}, errclass.New(errclass.Parse, fmt.Errorf("extract links from %s: %w", pageURL, err))
	}
	return x.page, nil
}

func checkType(contentType string) error {
	if strings.TrimSpace(contentType) == "" {
		return nil
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		// A broken parameter list still names its type; charset.DetermineEncoding copes.
		mt = strings.ToLower(strings.TrimSpace(strings.SplitN(contentType, ";", 2)[0]))
	}
	switch mt {
	case "text/html", "application/xhtml+xml":
		return nil
	}
	return errclass.Errorf(errclass.Type, "extract links: content type %q is not html", mt)
}

// extractor holds the state of one Extract call.
type extractor struct {
	opts    Options
	base    *url.URL
	baseSet bool
	page    Page
	seen    map[string]int // normalised URL -> index in page.Links
	inTitle bool
	titleOK bool
	refresh bool
}

func (x *extractor) run(z *html.Tokenizer) error {
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			if err := z.Err(); !errors.Is(err, io.EOF) {
				return err
			}
			return nil
		case html.TextToken:
			if x.inTitle {
				x.setTitle(string(z.Text()))
			}
		case html.EndTagToken:
			x.inTitle = false
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			x.inTitle = false
			if string(name) == "title" && !x.titleOK && tt == html.StartTagToken {
				x.inTitle, x.titleOK = true, true
				continue
			}
			if !hasAttr {
				continue
			}
			switch string(name) {
			case "a", "area", "base", "link", "meta":
				x.element(string(name), attrs(z))
			}
		}
	}
}

// attrs returns the first value of each attribute of the current tag; keys are lower-case.
func attrs(z *html.Tokenizer) map[string]string {
	m := make(map[string]string, 4)
	for more := true; more; {
		var k, v []byte
		k, v, more = z.TagAttr()
		if _, dup := m[string(k)]; !dup {
			m[string(k)] = string(v)
		}
	}
	return m
}

func (x *extractor) element(name string, a map[string]string) {
	switch name {
	case "base":
		href, ok := a["href"]
		if !ok || x.baseSet {
			return
		}
		x.baseSet = true
		if u, err := urlnorm.Resolve(x.base, href); err == nil {
			x.base = u
		}
	case "a", "area":
		if href, ok := a["href"]; ok {
			x.add(href, name, hasToken(a["rel"], "nofollow"))
		}
	case "link":
		href, ok := a["href"]
		if !ok || !hasToken(a["rel"], "canonical") {
			return
		}
		u := x.add(href, SourceCanonical, false)
		if x.page.Canonical == "" {
			x.page.Canonical = u
		}
	case "meta":
		x.meta(a)
	}
}

func (x *extractor) meta(a map[string]string) {
	content := a["content"]
	if strings.EqualFold(strings.TrimSpace(a["http-equiv"]), "refresh") && !x.refresh {
		if href, ok := refreshURL(content); ok {
			x.refresh = true
			x.add(href, SourceRefresh, false)
		}
		return
	}
	n := strings.TrimSpace(a["name"])
	if strings.EqualFold(n, "robots") || (x.opts.UserAgentToken != "" && strings.EqualFold(n, x.opts.UserAgentToken)) {
		noindex, nofollow := robotsDirectives(content)
		x.page.NoIndex = x.page.NoIndex || noindex
		x.page.NoFollow = x.page.NoFollow || nofollow
	}
}

// add resolves and records a link, returning its normalised URL ("" when skipped).
func (x *extractor) add(href, source string, nofollow bool) string {
	u, err := urlnorm.Resolve(x.base, href)
	if err != nil {
		x.page.Skipped++
		return ""
	}
	s := u.String()
	if i, ok := x.seen[s]; ok {
		x.page.Links[i].NoFollow = x.page.Links[i].NoFollow && nofollow
		return s
	}
	if len(x.page.Links) >= x.opts.MaxLinks {
		x.page.Truncated = true
		return s
	}
	x.seen[s] = len(x.page.Links)
	x.page.Links = append(x.page.Links, Link{URL: s, NoFollow: nofollow, Source: source})
	return s
}

func (x *extractor) setTitle(s string) {
	t := strings.Join(strings.Fields(s), " ")
	if len(t) > x.opts.MaxTitleBytes {
		cut := x.opts.MaxTitleBytes
		for cut > 0 && !utf8.RuneStart(t[cut]) {
			cut--
		}
		t = t[:cut]
	}
	x.page.Title = strings.ToValidUTF8(t, "\uFFFD")
}

// hasToken reports whether the space-separated list s contains tok, case-insensitively.
func hasToken(s, tok string) bool {
	for _, f := range strings.Fields(s) {
		if strings.EqualFold(f, tok) {
			return true
		}
	}
	return false
}

// refreshURL returns the URL of a meta refresh content such as `5; url='/next'` (the HTML
// standard's "shared declarative refresh steps", simplified).
func refreshURL(content string) (string, bool) {
	const ws = " \t\n\r\f"
	s := strings.TrimLeft(content, ws)
	if s == "" || !strings.ContainsRune("0123456789.", rune(s[0])) {
		return "", false
	}
	s = strings.TrimLeft(s, "0123456789.")
	if s == "" || !strings.ContainsRune(";,"+ws, rune(s[0])) {
		return "", false // no URL: the page refreshes itself
	}
	s = strings.TrimLeft(s, ws)
	if s != "" && (s[0] == ';' || s[0] == ',') {
		s = strings.TrimLeft(s[1:], ws)
	}
	if len(s) >= 3 && strings.EqualFold(s[:3], "url") {
		rest := strings.TrimLeft(s[3:], ws)
		if strings.HasPrefix(rest, "=") {
			s = strings.TrimLeft(rest[1:], ws)
		}
	}
	if s != "" && (s[0] == '\'' || s[0] == '"') {
		q := s[0]
		s = s[1:]
		if i := strings.IndexByte(s, q); i >= 0 {
			s = s[:i]
		}
	}
	s = strings.TrimSpace(s)
	return s, s != ""
}

// robotsDirectives reads a meta robots or X-Robots-Tag directive list.
func robotsDirectives(s string) (noindex, nofollow bool) {
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		switch strings.ToLower(f) {
		case "noindex":
			noindex = true
		case "nofollow":
			nofollow = true
		case "none":
			noindex, nofollow = true, true
		}
	}
	return noindex, nofollow
}
