package parser

import (
	"context"
	"net/url"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/records"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
	"github.com/crawlstack/crawlstack/shared/crawl/web/doctype"
	"github.com/crawlstack/crawlstack/shared/crawl/web/pdftext"
)

// The kinds of response a spec parses besides HTML (its parse key, shared/crawl/web/doctype): a
// PDF's text, metadata and links (shared/crawl/web/pdftext); a JSON response's json fields and
// items; a text/plain body's text. A response that cannot be read is recorded with its error
// (class parse), and the other pages of its batch are not touched.

// parseContent fills the record of p, a response of kind.
func (h *Handler) parseContent(ctx context.Context, p *parsed, page warcfile.Page, final *url.URL, kind doctype.Kind, cs settings) (*parsed, error) {
	ct := page.Header.Get("Content-Type")
	switch kind {
	case doctype.PDF:
		d, err := pdftext.Extract(ctx, page.Body, final, pdftext.Limits{MaxLinks: h.cfg.MaxLinks})
		if err != nil {
			return h.parseError(ctx, p, err)
		}
		p.out.Title, p.out.Text, p.out.TextTruncated = d.Title, d.Text, d.Truncated
		p.out.PDF = &records.PDFInfo{Author: d.Author, Subject: d.Subject, Keywords: d.Keywords, Creator: d.Creator,
			Producer: d.Producer, Created: d.Created, Modified: d.Modified, Pages: d.Pages}
		h.follow(p, d.Links, cs.maxDepth)
	case doctype.JSON:
		if cs.fields.Len() == 0 {
			return p, nil // stored and recorded: nothing to extract
		}
		res, err := cs.fields.ExtractJSON(final, page.Body)
		if err != nil {
			return h.parseError(ctx, p, err)
		}
		p.out.Data, p.out.DataErrors, p.out.Items = res.Data, res.Errors, res.Items
	case doctype.Text:
		text, cut, err := doctype.PlainText(page.Body, ct, doctype.MaxTextBytes)
		if err != nil {
			return h.parseError(ctx, p, err)
		}
		p.out.Text, p.out.TextTruncated = text, cut
	default:
		return h.parseError(ctx, p, errclass.Errorf(errclass.Type, "no parser for the kind %q", kind))
	}
	return p, nil
}

// follow records links, found in a page that is not HTML, as its out-links, and follows those that
// normalise, within the crawl's depth.
func (h *Handler) follow(p *parsed, links []string, maxDepth int) {
	for _, l := range links {
		u, err := urlnorm.Normalize(l)
		if err != nil {
			continue
		}
		p.out.OutLinks = append(p.out.OutLinks, u.String())
		if maxDepth < 0 || p.page.Depth+1 <= maxDepth {
			p.links = append(p.links, u.String())
		}
	}
}
