package extract

import (
	"net/url"
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
	switch v := expr.Evaluate(htmlquery.CreateXPathNavigator(in.Nodes[0])).(type) {
	case *xpath.NodeIterator:
		var items []any
		for v.MoveNext() && (f.All && len(items) < MaxItems || !f.All && len(items) == 0) {
			s, ok := f.nodeValue(v.Current().(*htmlquery.NodeNavigator))
			if !ok {
				continue
			}
			if s, ok = f.match(base, s); ok {
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
