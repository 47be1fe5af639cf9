// Package renderertest is a Browser for tests that "renders" deterministically, with no browser:
// what a page's scripts would build is written in its static HTML as data attributes.
//
//   - data-render-links="/a /b" on any element: the rendered DOM has a link to each URL (resolved
//     against the page's URL) at the end of its body;
//   - data-render-text="..." : the rendered DOM has this text in a <main> at the end of its body;
//   - data-render-load="/api/x": the page makes a GET sub-request of this URL through the
//     request's Loader, and the rendered DOM has the response's body as the text of a
//     <p class="loaded">, or the refusal's reason in a <p class="refused">.
package renderertest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/crawlstack/crawlstack/shared/crawl/web/render"
)

// Browser is the fake. Set Err to make every render fail with it (render.ErrNoBrowser, say).
type Browser struct {
	Err error
	// Renders counts the pages rendered, and Pages lists their URLs.
	Renders atomic.Int64
	mu      sync.Mutex
	pages   []string
	subs    []render.SubRequest
}

// Pages are the URLs of the pages rendered, in order.
func (b *Browser) Pages() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.pages...)
}

// SubRequests are the sub-requests of every page rendered.
func (b *Browser) SubRequests() []render.SubRequest {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]render.SubRequest(nil), b.subs...)
}

// Render builds the page's DOM from its data attributes.
func (b *Browser) Render(ctx context.Context, req render.Request) (render.Result, error) {
	if b.Err != nil {
		return render.Result{}, b.Err
	}
	base, err := url.Parse(req.Page.URL)
	if err != nil {
		return render.Result{}, err
	}
	doc, err := html.Parse(bytes.NewReader(req.Page.Body))
	if err != nil {
		return render.Result{}, err
	}
	var body *html.Node
	var links, texts, loads []string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			if n.DataAtom == atom.Body {
				body = n
			}
			for _, a := range n.Attr {
				switch a.Key {
				case "data-render-links":
					links = append(links, strings.Fields(a.Val)...)
				case "data-render-text":
					texts = append(texts, a.Val)
				case "data-render-load":
					loads = append(loads, strings.Fields(a.Val)...)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if body == nil {
		return render.Result{DOM: req.Page.Body}, nil
	}
	for _, l := range links {
		a := &html.Node{Type: html.ElementNode, Data: "a", DataAtom: atom.A, Attr: []html.Attribute{{Key: "href", Val: l}}}
		a.AppendChild(&html.Node{Type: html.TextNode, Data: l})
		body.AppendChild(a)
	}
	for _, t := range texts {
		m := &html.Node{Type: html.ElementNode, Data: "main", DataAtom: atom.Main}
		m.AppendChild(&html.Node{Type: html.TextNode, Data: t})
		body.AppendChild(m)
	}
	var subs []render.SubRequest
	for i, l := range loads {
		u, err := base.Parse(l)
		if err != nil {
			continue
		}
		sub := render.SubRequest{URL: u.String(), Type: "fetch"}
		max := req.Limits.MaxRequests
		if max == 0 {
			max = render.DefaultMaxRequests
		}
		class, text := "loaded", ""
		if i >= max {
			sub.Refused, class, text = "over the request cap", "refused", "over the request cap"
		} else if hr, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil); err != nil {
			sub.Refused, class, text = err.Error(), "refused", err.Error()
		} else if resp, err := req.Loader.Load(ctx, hr); err != nil {
			sub.Refused, class, text = err.Error(), "refused", err.Error()
		} else {
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			sub.Status, text = resp.StatusCode, string(got)
		}
		p := &html.Node{Type: html.ElementNode, Data: "p", DataAtom: atom.P, Attr: []html.Attribute{{Key: "class", Val: class}}}
		p.AppendChild(&html.Node{Type: html.TextNode, Data: text})
		body.AppendChild(p)
		subs = append(subs, sub)
	}
	var out bytes.Buffer
	out.WriteString("<!DOCTYPE html>")
	for c := doc.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.DoctypeNode {
			continue
		}
		if err := html.Render(&out, c); err != nil {
			return render.Result{}, err
		}
	}
	b.Renders.Add(1)
	b.mu.Lock()
	b.pages = append(b.pages, req.Page.URL)
	b.subs = append(b.subs, subs...)
	b.mu.Unlock()
	return render.Result{DOM: out.Bytes(), SubRequests: subs}, nil
}
