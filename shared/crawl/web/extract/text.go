package extract

import (
	"strings"

	"github.com/PuerkitoBio/goquery"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// hidden are the elements whose text a reader does not see.
var hidden = map[atom.Atom]bool{atom.Head: true, atom.Script: true, atom.Style: true, atom.Noscript: true,
	atom.Template: true, atom.Iframe: true, atom.Object: true, atom.Svg: true, atom.Select: true}

// visibleText is the text a reader sees on the page: its text nodes outside head, script, style
// and the like, whitespace collapsed to single spaces, cut at MaxValueBytes; nil when there is
// none. The walk is iterative: a page may nest deeply.
func visibleText(doc *goquery.Document) any {
	if len(doc.Nodes) == 0 {
		return nil
	}
	var b strings.Builder
	root := doc.Nodes[0]
	// Whitespace is collapsed at the end: the text is read up to a bound above the cap.
	for n := root; n != nil && b.Len() <= 4*MaxValueBytes; {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		} else if n.Type == html.ElementNode && !inline[n.DataAtom] {
			b.WriteByte(' ') // a block starts a new word
		}
		if n.FirstChild != nil && !(n.Type == html.ElementNode && hidden[n.DataAtom]) {
			n = n.FirstChild
			continue
		}
		for n != root && n.NextSibling == nil {
			n = n.Parent
		}
		if n == root {
			break
		}
		n = n.NextSibling
	}
	s := strings.Join(strings.Fields(b.String()), " ")
	if s == "" {
		return nil
	}
	return cut(s)
}

// inline are the elements that do not break a word.
var inline = map[atom.Atom]bool{atom.A: true, atom.Abbr: true, atom.B: true, atom.Bdi: true, atom.Bdo: true, atom.Cite: true,
	atom.Code: true, atom.Data: true, atom.Dfn: true, atom.Em: true, atom.I: true, atom.Kbd: true, atom.Mark: true, atom.Q: true,
	atom.S: true, atom.Samp: true, atom.Small: true, atom.Span: true, atom.Strong: true, atom.Sub: true, atom.Sup: true,
	atom.Time: true, atom.U: true, atom.Var: true}
