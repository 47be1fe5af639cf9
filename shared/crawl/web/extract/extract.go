// Package extract pulls structured fields out of an HTML page, as a crawl spec's extract section
// declares them: a CSS selector with an attribute or the text, a regexp on the result, one match
// or a list of all of them, the page's JSON-LD objects, a <meta> tag, the OpenGraph properties,
// or an Extractor registered by Go code.
//
// A field that finds nothing is null, never a failure. A field definition that cannot work (a
// malformed selector or regexp, an unknown extractor) is refused by Compile, before any page is
// crawled. Every value is bounded (MaxValueBytes, MaxItems, MaxDataBytes).
//
// Selectors are CSS as browsers read them, through github.com/PuerkitoBio/goquery and
// andybalholm/cascadia, or XPath 1.0, through github.com/antchfx/htmlquery; the page is parsed
// with golang.org/x/net/html after decoding it to UTF-8 with golang.org/x/net/html/charset. A
// JSON response is read by JSONPath (RFC 9535) selectors, through github.com/theory/jsonpath.
package extract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/PuerkitoBio/goquery"
	"github.com/andybalholm/cascadia"
	"github.com/antchfx/xpath"
	"github.com/theory/jsonpath"
	"golang.org/x/net/html/charset"
)

// Bounds on what one page yields.
const (
	// MaxFields bounds the fields of one spec.
	MaxFields = 100
	// MaxValueBytes bounds one string value; a longer one is cut (at a UTF-8 boundary).
	MaxValueBytes = 16 << 10
	// MaxItems bounds a list field's items, and the JSON-LD objects kept.
	MaxItems = 1000
	// MaxDataBytes bounds a record's data as JSON: fields past it are null, with an error saying so.
	MaxDataBytes = 256 << 10
)

// Field is one declarative field. Exactly one of CSS, XPath, JSON, JSONLD, Meta, OpenGraph and Extractor
// says where the value comes from.
type Field struct {
	// Name is the key of the value in the record's data.
	Name string `json:"name"`
	// CSS selects elements; the value is the first one's text (whitespace collapsed), or its
	// attribute Attr when set. With All, every selected element gives one item of a list.
	CSS  string `json:"css,omitempty"`
	Attr string `json:"attr,omitempty"`
	All  bool   `json:"all,omitempty"`
	// XPath is an XPath 1.0 expression, as CSS is used (Attr and All too): a node's value is an
	// element's text, an attribute's or a text node's value; an expression of a string, a number
	// or a boolean (string(//h1), count(//li)) is that value.
	XPath string `json:"xpath,omitempty"`
	// Regexp, applied to each string a CSS, XPath or Meta field found, keeps the match (its first
	// group when it has one); a string it does not match is dropped.
	Regexp string `json:"regexp,omitempty"`
	// URL resolves each string a CSS, XPath or Meta field found against the page's URL (an href
	// of "../a" on https://x.example/b/c gives https://x.example/a); a string that is no URL is
	// dropped.
	URL bool `json:"url,omitempty"`
	// JSONLD takes the page's <script type="application/ld+json"> objects (those of a @graph
	// too): "*" all of them, as a list; a schema.org type such as "Product", the first object of
	// that type (every one with All).
	JSONLD string `json:"jsonld,omitempty"`
	// Meta is the content of the first <meta name=...> or <meta property=...> with this name.
	Meta string `json:"meta,omitempty"`
	// OpenGraph takes every og:* <meta property> as an object ("og:title" -> "title"); a
	// property given several times is a list.
	OpenGraph bool `json:"opengraph,omitempty"`
	// Extractor names an Extractor registered with Register.
	Extractor string `json:"extractor,omitempty"`
	// JSON is a JSONPath expression (RFC 9535) run on a JSON response ($ is the document, or
	// within an item rule the item): the first node it selects, as JSON (a string, number,
	// object ...), or with All every node, as a list. Regexp and URL apply to the string values.
	// It finds nothing on an HTML page, as the HTML selectors find nothing on a JSON one.
	JSON string `json:"json,omitempty"`
	// VisibleText takes the text a reader sees on an HTML page: its text outside head, script,
	// style and the like, whitespace collapsed, cut at MaxValueBytes.
	VisibleText bool `json:"visibleText,omitempty"`
}

// KeyError is a field definition that cannot work; Key names the setting at fault ("css",
// "regexp" ...; empty for the field as a whole), so that a spec error can point at its line.
type KeyError struct {
	Key string
	Err error
}

func (e *KeyError) Error() string {
	if e.Key == "" {
		return e.Err.Error()
	}
	return e.Key + ": " + e.Err.Error()
}
func (e *KeyError) Unwrap() error { return e.Err }

var namePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// compiled is a Field ready to run.
type compiled struct {
	Field
	sel  cascadia.Selector
	re   *regexp.Regexp
	ext  Extractor
	path *jsonpath.Path
}

// compile compiles f, or says which of its settings is wrong.
func (f Field) compile() (compiled, error) {
	c := compiled{Field: f}
	if !namePattern.MatchString(f.Name) {
		return c, &KeyError{"name", fmt.Errorf("%q: want letters, digits and _, not starting with a digit, at most 64", f.Name)}
	}
	sources := 0
	for _, set := range []bool{f.CSS != "", f.XPath != "", f.JSONLD != "", f.Meta != "", f.OpenGraph, f.Extractor != "", f.JSON != "", f.VisibleText} {
		if set {
			sources++
		}
	}
	if sources != 1 {
		return c, &KeyError{"", fmt.Errorf("field %s: want exactly one of css, xpath, json, jsonld, meta, opengraph, visible_text and extractor, got %d", f.Name, sources)}
	}
	switch {
	case f.CSS != "":
		sel, err := cascadia.Compile(f.CSS)
		if err != nil {
			return c, &KeyError{"css", fmt.Errorf("selector %q: %w", f.CSS, err)}
		}
		c.sel = sel
	case f.XPath != "":
		if _, err := xpath.Compile(f.XPath); err != nil {
			return c, &KeyError{"xpath", fmt.Errorf("expression %q: %w", f.XPath, err)}
		}
	case f.JSON != "":
		p, err := compileJSONPath(f.JSON)
		if err != nil {
			return c, &KeyError{"json", err}
		}
		c.path = p
	case f.Extractor != "":
		e, ok := Lookup(f.Extractor)
		if !ok {
			return c, &KeyError{"extractor", fmt.Errorf("no extractor is registered as %q (registered: %s)", f.Extractor, strings.Join(Names(), ", "))}
		}
		c.ext = e
	}
	selects := f.CSS != "" || f.XPath != ""
	if f.Attr != "" && !selects {
		return c, &KeyError{"attr", errors.New("attr goes with css or xpath")}
	}
	if f.URL && !selects && f.Meta == "" && f.JSON == "" {
		return c, &KeyError{"url", errors.New("url goes with css, xpath, json or meta")}
	}
	if f.Regexp != "" {
		if !selects && f.Meta == "" && f.JSON == "" {
			return c, &KeyError{"regexp", errors.New("regexp goes with css, xpath, json or meta")}
		}
		re, err := regexp.Compile(f.Regexp)
		if err != nil {
			return c, &KeyError{"regexp", fmt.Errorf("%q: %w", f.Regexp, err)}
		}
		c.re = re
	}
	if f.All && !selects && f.JSONLD == "" && f.JSON == "" {
		return c, &KeyError{"all", errors.New("all goes with css, xpath, json or jsonld")}
	}
	return c, nil
}

// Check says whether f can work, without keeping it compiled.
func (f Field) Check() error {
	_, err := f.compile()
	return err
}

// Set is the compiled fields and item rules of one crawl. It is safe for concurrent use.
type Set struct {
	fields []compiled
	rules  []compiledRule
}

// Compile checks and compiles fields and the item rules. Its error names the first field or rule
// that cannot work.
func Compile(fields []Field, rules ...Rule) (*Set, error) {
	if len(fields) > MaxFields {
		return nil, fmt.Errorf("%d fields, over the limit of %d", len(fields), MaxFields)
	}
	if len(rules) > MaxRules {
		return nil, fmt.Errorf("%d item rules, over the limit of %d", len(rules), MaxRules)
	}
	rs, err := compileAll(rules, "items", func(r Rule) string { return r.Name }, Rule.compile)
	if err != nil {
		return nil, err
	}
	fs, err := compileAll(fields, "field", func(f Field) string { return f.Name }, Field.compile)
	if err != nil {
		return nil, err
	}
	return &Set{fields: fs, rules: rs}, nil
}

// compileAll compiles each of xs, whose names must differ; its error names the first that cannot
// work, as "kind NAME: ...".
func compileAll[T, C any](xs []T, kind string, name func(T) string, compile func(T) (C, error)) ([]C, error) {
	var out []C
	seen := map[string]bool{}
	for _, x := range xs {
		n := name(x)
		if seen[n] {
			return nil, fmt.Errorf("%s %s: %w", kind, n, &KeyError{"name", errors.New("defined twice")})
		}
		seen[n] = true
		c, err := compile(x)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", kind, n, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// Len is the number of fields and item rules.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.fields) + len(s.rules)
}

// Result is what Extract found on one page.
type Result struct {
	// Data has one entry per field: its value, or nil (JSON null) where the field found nothing.
	Data map[string]any
	// Items has, by item rule, the list of the items it found (each an object of its fields);
	// nil when no rule found any.
	Items map[string]any
	// Errors, by field, are registered extractors that failed and fields cut for size: their
	// values are nil; "items.NAME" says a rule's items were cut for size.
	Errors map[string]string
}

// Extract runs every field on one page, body as served with contentType from pageURL: a JSON
// response (IsJSON) through ExtractJSON, any other as HTML. A page that does not parse gives every
// field nil (the parse handler records the page's own error).
func (s *Set) Extract(pageURL *url.URL, body []byte, contentType string) Result {
	res := Result{Data: make(map[string]any, s.Len())}
	if s.Len() == 0 {
		return res
	}
	if IsJSON(contentType) {
		if r, err := s.ExtractJSON(pageURL, body); err == nil {
			return r
		}
		for _, f := range s.fields {
			res.Data[f.Name] = nil
		}
		return res
	}
	r, err := charset.NewReader(bytes.NewReader(body), contentType)
	var doc *goquery.Document
	if err == nil {
		doc, err = goquery.NewDocumentFromReader(r)
	}
	if err != nil {
		for _, f := range s.fields {
			res.Data[f.Name] = nil
		}
		return res // no items: a page that does not parse has none
	}
	p := &Page{URL: pageURL, Doc: doc}
	return s.run(p)
}

// run runs every field on p, bounding the data's size.
func (s *Set) run(p *Page) Result {
	res := Result{Data: make(map[string]any, s.Len())}
	size := 0
	for _, f := range s.fields {
		v, ferr := f.run(p)
		if ferr == nil {
			if b, jerr := json.Marshal(v); jerr != nil {
				ferr = fmt.Errorf("value is not JSON: %w", jerr)
			} else if size += len(b); size > MaxDataBytes {
				ferr = fmt.Errorf("the page's data is over %d bytes", MaxDataBytes)
			}
		}
		if ferr != nil {
			v = nil
			if res.Errors == nil {
				res.Errors = map[string]string{}
			}
			res.Errors[f.Name] = cut(ferr.Error())
		}
		res.Data[f.Name] = v
	}
	errs := map[string]string{}
	res.Items = s.items(p, errs)
	for k, v := range errs {
		if res.Errors == nil {
			res.Errors = map[string]string{}
		}
		res.Errors[k] = v
	}
	return res
}

// run finds the field's value on p: nil when it finds nothing.
func (f compiled) run(p *Page) (any, error) {
	if p.isJSON {
		return f.jsonValue(p.URL, p.json), nil // nil for a field that is not json
	}
	switch {
	case f.CSS != "":
		return f.css(p.URL, p.Doc.Selection), nil
	case f.XPath != "":
		return f.xpath(p.URL, p.Doc.Selection), nil
	case f.Meta != "":
		v, ok := metaContent(p.Doc, f.Meta)
		return f.one(p.URL, v, ok), nil
	case f.OpenGraph:
		return openGraph(p.Doc), nil
	case f.VisibleText:
		return visibleText(p.Doc), nil
	case f.JSONLD != "":
		return f.jsonLD(p.Doc), nil
	}
	if f.JSON != "" {
		return nil, nil // a JSON selector on an HTML page
	}
	v, err := f.ext.Extract(p)
	if err != nil {
		return nil, fmt.Errorf("extractor %s: %w", f.Extractor, err)
	}
	return v, nil
}

// css is the field's CSS selector's value within in: the first match's, or with All every one's.
func (f compiled) css(base *url.URL, in *goquery.Selection) any {
	var items []any
	in.FindMatcher(f.sel).EachWithBreak(func(_ int, s *goquery.Selection) bool {
		var v string
		var ok bool
		if f.Attr != "" {
			v, ok = s.Attr(f.Attr)
		} else {
			v, ok = strings.Join(strings.Fields(s.Text()), " "), true
		}
		if ok {
			if v, ok = f.match(base, v); ok {
				items = append(items, v)
			}
		}
		// One item is enough for a single value; a list stops at MaxItems.
		return f.All && len(items) < MaxItems || !f.All && len(items) == 0
	})
	return f.value(items)
}

// value is the field's value of the items it found: the list with All, else the first, or nil.
func (f compiled) value(items []any) any {
	if f.All {
		if items == nil {
			return nil
		}
		return items
	}
	if len(items) == 0 {
		return nil
	}
	return items[0]
}

// one is a single string value through the field's regexp, or nil.
func (f compiled) one(base *url.URL, v string, ok bool) any {
	if !ok {
		return nil
	}
	if v, ok = f.match(base, v); !ok {
		return nil
	}
	return v
}

// match applies the field's regexp to v (the match, or its first group), then with URL resolves
// it against base.
func (f compiled) match(base *url.URL, v string) (string, bool) {
	if f.re != nil {
		m := f.re.FindStringSubmatch(v)
		if m == nil {
			return "", false
		}
		v = m[0]
		if len(m) > 1 {
			v = m[1]
		}
	}
	if f.URL {
		ref, err := url.Parse(strings.TrimSpace(v))
		if err != nil || base == nil {
			return "", false
		}
		v = base.ResolveReference(ref).String()
	}
	return cut(v), true
}

// cut bounds a string value at MaxValueBytes, on a UTF-8 boundary.
func cut(s string) string {
	if len(s) <= MaxValueBytes {
		return s
	}
	s = s[:MaxValueBytes]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
