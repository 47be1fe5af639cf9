package extract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"

	"github.com/theory/jsonpath"

	"github.com/crawlstack/crawlstack/shared/crawl/web/doctype"
)

// JSON responses, read by JSONPath (RFC 9535) selectors through github.com/theory/jsonpath.

// maxJSONPath bounds a JSONPath expression.
const maxJSONPath = 4 << 10

// compileJSONPath parses expr, a JSONPath expression that starts at $.
func compileJSONPath(expr string) (*jsonpath.Path, error) {
	if len(expr) > maxJSONPath {
		return nil, fmt.Errorf("expression of %d bytes, over the limit of %d", len(expr), maxJSONPath)
	}
	p, err := jsonpath.Parse(expr)
	if err != nil {
		return nil, fmt.Errorf("expression %q: %w", expr, err)
	}
	return p, nil
}

// IsJSON reports whether contentType (a Content-Type header's value) is JSON: application/json,
// text/json, or a type of the +json suffix (application/ld+json, application/vnd.api+json ...).
func IsJSON(contentType string) bool {
	k, ok := doctype.Of(contentType)
	return ok && k == doctype.JSON
}

// ExtractJSON runs every field on one JSON response, body, from pageURL: its JSON fields and
// item rules; every other field is nil. A body that is not one JSON value is an error.
func (s *Set) ExtractJSON(pageURL *url.URL, body []byte) (Result, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber() // numbers keep their digits
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return Result{}, fmt.Errorf("read the JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Result{}, errors.New("read the JSON: more than one value")
	}
	if s.Len() == 0 {
		return Result{Data: map[string]any{}}, nil
	}
	return s.run(&Page{URL: pageURL, isJSON: true, json: doc}), nil
}

// jsonValue is the field's JSONPath value within doc: the first node it selects, or with All every
// one, as a list; nil when it selects nothing, and for a field that is not json. With Regexp or
// URL, only string values are kept, through them.
func (f compiled) jsonValue(base *url.URL, doc any) any {
	if f.path == nil {
		return nil
	}
	var items []any
	for v := range f.path.Select(doc).All() {
		if !f.All && len(items) == 1 || len(items) == MaxItems {
			break
		}
		if s, ok := v.(string); ok {
			if s, ok = f.match(base, s); ok {
				items = append(items, s)
			}
			continue
		}
		if f.re == nil && !f.URL {
			items = append(items, v)
		}
	}
	return f.value(items)
}

// jsonItems are the items path selects in doc, at most MaxItems: each element of a selected
// array, and each other value selected.
func jsonItems(path *jsonpath.Path, doc any) []any {
	var out []any
	for v := range path.Select(doc).All() {
		if a, ok := v.([]any); ok {
			out = append(out, a...)
		} else {
			out = append(out, v)
		}
		if len(out) >= MaxItems {
			return out[:MaxItems]
		}
	}
	return out
}
