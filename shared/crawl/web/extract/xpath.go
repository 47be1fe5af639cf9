package extract

import (
	"cmp"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/PuerkitoBio/goquery"
	"github.com/antchfx/htmlquery"
	"github.com/antchfx/xpath"
	"golang.org/x/net/html"
)

// xpath is the field's XPath expression's value within in (its first node; a page's document):
// the first node's, or with All every one's; an expression of a string, number or boolean gives
// that value. The expression is compiled for each call: an xpath.Expr keeps state while it is
// evaluated, and the fields of a spec run on many pages at once.
func (f compiled) xpath(base *url.URL, in *goquery.Selection) any {
	expr, err := xpath.Compile(f.XPath)
	if err != nil || in.Length() == 0 {
		return nil // compile checked it
	}
	root := in.Nodes[0]
	switch v := expr.Evaluate(htmlquery.CreateXPathNavigator(root)).(type) {
	case *xpath.NodeIterator:
		var sel []selected
		for v.MoveNext() && len(sel) < maxSelected {
			nav := v.Current().(*htmlquery.NodeNavigator)
			if s, ok := f.nodeValue(nav); ok {
				sel = append(sel, selected{nav.Current(), s})
			}
		}
		documentOrder(root, sel, func(x selected) *html.Node { return x.node })
		var items []any
		for _, x := range sel {
			if !f.All && len(items) == 1 || len(items) == MaxItems {
				break
			}
			if s, ok := f.match(base, x.value); ok {
				items = append(items, s)
			}
		}
		return f.value(items)
	case string:
		return f.one(base, v, v != "")
	case float64:
		return f.one(base, strconv.FormatFloat(v, 'f', -1, 64), true)
	case bool:
		return v
	}
	return nil
}

// selected is a node an expression selected, with its value.
type selected struct {
	node  *html.Node
	value string
}

// maxSelected bounds the nodes one expression's value is chosen from.
const maxSelected = 100 * MaxItems

// documentOrder sorts xs into the order of their nodes in the document under root, as XPath's
// results are read: antchfx/xpath yields //a grouped by parent, and a node set has no order of its
// own. An attribute sorts as its element. The walk is iterative: a page may nest deeply.
func documentOrder[T any](root *html.Node, xs []T, node func(T) *html.Node) {
	if len(xs) < 2 {
		return
	}
	pos := map[*html.Node]int{}
	for n, i := root, 0; n != nil; i++ {
		pos[n] = i
		switch {
		case n.FirstChild != nil:
			n = n.FirstChild
		default:
			for n != root && n.NextSibling == nil {
				n = n.Parent
			}
			if n == root {
				n = nil
			} else {
				n = n.NextSibling
			}
		}
	}
	slices.SortStableFunc(xs, func(a, b T) int { return cmp.Compare(pos[node(a)], pos[node(b)]) })
}

// nodeValue is the string of a node an expression selected: an attribute's or a text node's
// value, or an element's text (whitespace collapsed), or with Attr the element's attribute.
func (f compiled) nodeValue(nav *htmlquery.NodeNavigator) (string, bool) {
	switch nav.NodeType() {
	case xpath.AttributeNode, xpath.TextNode, xpath.CommentNode:
		return nav.Value(), true
	}
	n := nav.Current()
	if f.Attr != "" {
		if n.Type != html.ElementNode {
			return "", false
		}
		for _, a := range n.Attr {
			if a.Key == f.Attr {
				return a.Val, true
			}
		}
		return "", false
	}
	return strings.Join(strings.Fields(htmlquery.InnerText(n)), " "), true
}
