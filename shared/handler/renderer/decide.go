package renderer

import (
	"bytes"
	"fmt"
	"mime"
	"net/url"
	"regexp"
	"strings"

	"golang.org/x/net/html"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
	"github.com/crawlstack/crawlstack/shared/crawl/web/links"
	"github.com/crawlstack/crawlstack/shared/crawl/web/render"
)

// rules are a crawl's render section, compiled: which pages render, and how.
type rules struct {
	patterns   []*regexp.Regexp
	fewerLinks int
	noMain     bool
	wait       render.Wait
	limits     render.Limits
}

// compile reads a render section, checked when its spec was read.
func compile(r *crawlspec.Render) (*rules, error) {
	out := &rules{fewerLinks: r.WhenFewerLinks, noMain: r.WhenNoMain,
		wait:   render.Wait{NetworkIdle: r.Wait.NetworkIdle, Selector: r.Wait.Selector, Max: r.Wait.Max},
		limits: render.Limits{MaxRequests: r.Limits.MaxRequests, MaxBytes: r.Limits.MaxBytes, Load: r.Limits.Load}}
	for _, p := range r.Patterns {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("render pattern %q: %w", p, err)
		}
		out.patterns = append(out.patterns, re)
	}
	return out, nil
}

// mayRender says whether a page is one that renders at all, before it is read: an HTML page
// that answered 2xx, not a sitemap, not a revisit.
func (r *rules) mayRender(pg message.Page) bool {
	if pg.Sitemap || pg.Unchanged != nil || pg.Status < 200 || pg.Status > 299 {
		return false
	}
	mt, _, err := mime.ParseMediaType(pg.ContentType)
	return err == nil && (mt == "text/html" || mt == "application/xhtml+xml")
}

// needs says whether a page renders: its URL matches a pattern, or its static HTML has fewer
// links than the section's when_fewer_links, or no <main> with text under when_no_main.
func (r *rules) needs(pg message.Page, stored warcfile.Page) (bool, error) {
	for _, re := range r.patterns {
		if re.MatchString(pg.URL) || re.MatchString(pg.FinalURL) {
			return true, nil
		}
	}
	if r.fewerLinks > 0 {
		final, err := url.Parse(stored.URL)
		if err != nil {
			return false, err
		}
		found, err := links.Extract(stored.Body, stored.Header.Get("Content-Type"), final, links.Options{MaxLinks: r.fewerLinks})
		if err != nil {
			return false, err
		}
		if len(found.Links) < r.fewerLinks {
			return true, nil
		}
	}
	if r.noMain {
		return !hasMainText(stored.Body), nil
	}
	return false, nil
}

// hasMainText says whether an HTML document has a <main> element (or an element of role main)
// with text in it.
func hasMainText(body []byte) bool {
	doc, err := html.Parse(bytes.NewReader(body))
	if err != nil {
		return false
	}
	var found bool
	var walk func(n *html.Node, inMain bool)
	walk = func(n *html.Node, inMain bool) {
		if found {
			return
		}
		if n.Type == html.ElementNode && (n.Data == "main" || attr(n, "role") == "main") {
			inMain = true
		}
		if n.Type == html.ElementNode && (n.Data == "script" || n.Data == "style" || n.Data == "template") {
			return
		}
		if inMain && n.Type == html.TextNode && strings.TrimSpace(n.Data) != "" {
			found = true
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, inMain)
		}
	}
	walk(doc, false)
	return found
}

func attr(n *html.Node, name string) string {
	for _, a := range n.Attr {
		if a.Key == name {
			return a.Val
		}
	}
	return ""
}
