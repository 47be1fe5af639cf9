package extract

import (
	"encoding/json"
	"strings"

	"github.com/PuerkitoBio/goquery"
)

// metaContent is the content of the first <meta name=...> or <meta property=...> called name
// (case-insensitively, as HTML names go).
func metaContent(doc *goquery.Document, name string) (string, bool) {
	var out string
	var found bool
	doc.Find("meta[content]").EachWithBreak(func(_ int, s *goquery.Selection) bool {
		for _, a := range []string{"property", "name"} {
			if v, ok := s.Attr(a); ok && strings.EqualFold(strings.TrimSpace(v), name) {
				out, found = s.AttrOr("content", ""), true
				return false
			}
		}
		return true
	})
	return out, found
}

// openGraph is every og:* property of the page as an object ("og:image" -> "image"), a property
// given several times a list; nil when the page has none.
func openGraph(doc *goquery.Document) any {
	out := map[string]any{}
	doc.Find("meta[property][content]").Each(func(_ int, s *goquery.Selection) {
		p := strings.ToLower(strings.TrimSpace(s.AttrOr("property", "")))
		key, ok := strings.CutPrefix(p, "og:")
		if !ok || key == "" || len(out) >= MaxItems {
			return
		}
		v := cut(s.AttrOr("content", ""))
		switch old := out[key].(type) {
		case nil:
			out[key] = v
		case string:
			out[key] = []any{old, v}
		case []any:
			if len(old) < MaxItems {
				out[key] = append(old, v)
			}
		}
	})
	if len(out) == 0 {
		return nil
	}
	return out
}

// jsonLD is the field's JSON-LD: every object for "*", or the objects of its @type (the first
// one, or all with All); nil when there is none. A script that is not JSON is passed over.
func (f compiled) jsonLD(doc *goquery.Document) any {
	var objs []any
	doc.Find(`script[type="application/ld+json"]`).EachWithBreak(func(_ int, s *goquery.Selection) bool {
		var v any
		if json.Unmarshal([]byte(s.Text()), &v) != nil {
			return true
		}
		for _, o := range flatten(v) {
			if f.JSONLD == "*" || hasType(o, f.JSONLD) {
				objs = append(objs, o)
			}
		}
		return len(objs) < MaxItems
	})
	switch {
	case len(objs) == 0:
		return nil
	case f.JSONLD == "*" || f.All:
		return objs[:min(len(objs), MaxItems)]
	}
	return objs[0]
}

// flatten lists the objects of one JSON-LD script: an object, a list of them, and the members
// of a @graph.
func flatten(v any) []map[string]any {
	var out []map[string]any
	switch t := v.(type) {
	case []any:
		for _, e := range t {
			out = append(out, flatten(e)...)
		}
	case map[string]any:
		if g, ok := t["@graph"]; ok {
			return flatten(g)
		}
		out = append(out, t)
	}
	return out
}

// hasType says whether o's @type is typ, or a list that holds it; "https://schema.org/Product"
// counts as "Product".
func hasType(o map[string]any, typ string) bool {
	is := func(v any) bool {
		s, _ := v.(string)
		s = s[strings.LastIndexAny(s, "/#")+1:]
		return strings.EqualFold(s, typ)
	}
	switch t := o["@type"].(type) {
	case string:
		return is(t)
	case []any:
		for _, e := range t {
			if is(e) {
				return true
			}
		}
	}
	return false
}
