package extract

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/PuerkitoBio/goquery"
	"github.com/andybalholm/cascadia"
	"github.com/antchfx/htmlquery"
	"github.com/antchfx/xpath"
	"github.com/theory/jsonpath"
	"golang.org/x/net/html"
)

// Bounds on a page's items.
const (
	// MaxRules bounds the item rules of one spec.
	MaxRules = 20
	// MaxItemsBytes bounds a page's items as JSON: the items past it are left out, with an error
	// saying so.
	MaxItemsBytes = 512 << 10
)

// Rule yields one item per node it selects, as a listing page of 50 products yields 50 items: CSS,
// XPath or JSON (exactly one) selects the nodes, and each of Fields runs within one node. A field's
// CSS selects among the node's descendants; its XPath starts at the node ("." is the node itself,
// "@href" its attribute, ".//a" a descendant). A JSON rule's JSONPath selects in a JSON response:
// each element of a selected array is an item (as is each other value selected), and its fields
// are JSONPath too, with $ the item.
type Rule struct {
	// Name is the key of the rule's items in the record's items.
	Name   string  `json:"name"`
	CSS    string  `json:"css,omitempty"`
	XPath  string  `json:"xpath,omitempty"`
	JSON   string  `json:"json,omitempty"`
	Fields []Field `json:"fields"`
}

// compiledRule is a Rule ready to run.
type compiledRule struct {
	Rule
	sel    cascadia.Selector
	path   *jsonpath.Path
	fields []compiled
}

// compile compiles r, or says which of its settings is wrong.
func (r Rule) compile() (compiledRule, error) {
	c := compiledRule{Rule: r}
	if !namePattern.MatchString(r.Name) {
		return c, &KeyError{"name", fmt.Errorf("%q: want letters, digits and _, not starting with a digit, at most 64", r.Name)}
	}
	switch n := btoi(r.CSS != "") + btoi(r.XPath != "") + btoi(r.JSON != ""); {
	case n != 1:
		return c, &KeyError{"", errors.New("want exactly one of css, xpath and json to select its nodes")}
	case r.JSON != "":
		p, err := compileJSONPath(r.JSON)
		if err != nil {
			return c, &KeyError{"json", err}
		}
		c.path = p
	case r.CSS != "":
		sel, err := cascadia.Compile(r.CSS)
		if err != nil {
			return c, &KeyError{"css", fmt.Errorf("selector %q: %w", r.CSS, err)}
		}
		c.sel = sel
	default:
		if _, err := xpath.Compile(r.XPath); err != nil {
			return c, &KeyError{"xpath", fmt.Errorf("expression %q: %w", r.XPath, err)}
		}
	}
	if len(r.Fields) == 0 {
		return c, &KeyError{"fields", errors.New("want at least one field")}
	}
	if len(r.Fields) > MaxFields {
		return c, &KeyError{"fields", fmt.Errorf("%d fields, over the limit of %d", len(r.Fields), MaxFields)}
	}
	seen := map[string]bool{}
	for _, f := range r.Fields {
		if seen[f.Name] {
			return c, &KeyError{"fields." + f.Name, errors.New("defined twice")}
		}
		seen[f.Name] = true
		switch {
		case r.JSON != "" && f.JSON == "":
			return c, &KeyError{"fields." + f.Name, errors.New("a field of a json item is json, within the item ($)")}
		case r.JSON == "" && f.CSS == "" && f.XPath == "":
			return c, &KeyError{"fields." + f.Name, errors.New("a field of an item is css or xpath, within the item's node")}
		}
		cf, err := f.compile()
		if err != nil {
			var ke *KeyError
			if errors.As(err, &ke) {
				return c, &KeyError{join("fields."+f.Name, ke.Key), ke.Err}
			}
			return c, err
		}
		c.fields = append(c.fields, cf)
	}
	return c, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// join is a setting's path: parent.key, or parent alone for the field as a whole.
func join(parent, key string) string {
	if key == "" {
		return parent
	}
	return parent + "." + key
}

// Check says whether r can work, without keeping it compiled.
func (r Rule) Check() error {
	_, err := r.compile()
	return err
}

// each are the items r yields on p, at most MaxItems: its fields on each node it selects.
func (r compiledRule) each(p *Page) []map[string]any {
	if (r.path != nil) != p.isJSON {
		return nil // a JSON rule on an HTML page, or an HTML rule on a JSON one
	}
	var out []map[string]any
	if p.isJSON {
		for _, v := range jsonItems(r.path, p.json) {
			item := make(map[string]any, len(r.fields))
			for _, f := range r.fields {
				item[f.Name] = f.jsonValue(p.URL, v)
			}
			out = append(out, item)
		}
		return out
	}
	for _, n := range r.nodes(p) {
		in := goquery.NewDocumentFromNode(n).Selection
		item := make(map[string]any, len(r.fields))
		for _, f := range r.fields {
			if f.CSS != "" {
				item[f.Name] = f.css(p.URL, in)
			} else {
				item[f.Name] = f.xpath(p.URL, in)
			}
		}
		out = append(out, item)
	}
	return out
}

// nodes are the nodes r selects on p, at most MaxItems.
func (r compiledRule) nodes(p *Page) []*html.Node {
	var out []*html.Node
	if r.sel != nil {
		p.Doc.FindMatcher(r.sel).EachWithBreak(func(_ int, s *goquery.Selection) bool {
			out = append(out, s.Nodes...)
			return len(out) < MaxItems
		})
		return out
	}
	expr, err := xpath.Compile(r.XPath)
	if err != nil || len(p.Doc.Nodes) == 0 {
		return nil // compile checked it
	}
	it := expr.Select(htmlquery.CreateXPathNavigator(p.Doc.Nodes[0]))
	for it.MoveNext() && len(out) < maxSelected {
		if n := it.Current().(*htmlquery.NodeNavigator); n.NodeType() == xpath.ElementNode {
			out = append(out, n.Current())
		}
	}
	documentOrder(p.Doc.Nodes[0], out, func(n *html.Node) *html.Node { return n })
	return out[:min(len(out), MaxItems)]
}

// items runs the rules on p: by rule, one object of fields per node, in document order. Rules
// that select nothing are left out; the items past MaxItemsBytes too, with an error in errs.
func (s *Set) items(p *Page, errs map[string]string) map[string]any {
	if len(s.rules) == 0 {
		return nil
	}
	out := map[string]any{}
	size := 0
	for _, r := range s.rules {
		var list []any
		for _, item := range r.each(p) {
			b, err := json.Marshal(item)
			if err == nil {
				size += len(b)
			}
			if err != nil || size > MaxItemsBytes {
				errs["items."+r.Name] = fmt.Sprintf("the page's items are over %d bytes: %d of the rule's items kept", MaxItemsBytes, len(list))
				break
			}
			list = append(list, item)
		}
		if len(list) > 0 {
			out[r.Name] = list
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
