package cli

import (
	"context"
	"fmt"
	"net/url"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/frontier"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
	"github.com/crawlstack/crawlstack/shared/crawl/web/robots"
	"github.com/crawlstack/crawlstack/shared/handler/parser"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// A wider --scope or a deeper --max-depth refuses nothing that was recorded: a link out of its
// seed's scope may come in from another page, so the frontier records nothing for it, and a page at
// the last depth sends no links at all. So the pages those links were found on are read again from
// the crawl's WARC files, and their links sent to schedule again, which admits them under the new
// flags (those it knows already cost a look each).

// relinkPages picks the fetched pages of the crawl whose links the changed flags may now admit:
// every page when --scope changed, the pages at the old last depth when --max-depth grew.
func relinkPages(ctx context.Context, st *crawlstate.Store, crawl string, was, now refusalFlags) ([]crawlstate.URL, error) {
	wider := now.Scope != was.Scope
	deeper := was.MaxDepth >= 0 && (now.MaxDepth < 0 || now.MaxDepth > was.MaxDepth)
	if !wider && !deeper {
		return nil, nil
	}
	var pages []crawlstate.URL
	err := st.EachURL(ctx, crawl, func(u crawlstate.URL) error {
		if u.State == crawlstate.Fetched && u.Page != nil && (wider || u.Depth == was.MaxDepth) {
			pages = append(pages, u)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("find the pages to read again: %w", err)
	}
	return pages, nil
}

// relink reads the pages again and sends their links to schedule (res.Schedule) at the next depth,
// unless it is over maxDepth, named in st first (crawlstate.NoteLinksSent) for the crawl's end to
// wait for them. It returns how many pages' links it sent.
func relink(ctx context.Context, be *Backend, res Resources, st *crawlstate.Store, crawl string, pages []crawlstate.URL, maxDepth int, userAgent string) (int, error) {
	token := robots.ProductToken(userAgent)
	var entries []queue.Entry
	var names []string
	sent := 0
	for _, u := range pages {
		if maxDepth >= 0 && u.Depth+1 > maxDepth {
			continue
		}
		raw, err := be.Blobs.GetRange(ctx, u.Page.WARCKey, u.Page.Offset, u.Page.Length)
		if err != nil {
			return sent, fmt.Errorf("read the page of %s again: %w", u.URL, err)
		}
		page, err := warcfile.Decode(raw)
		if err != nil {
			continue // parse recorded it as a parse error
		}
		final, err := url.Parse(u.Page.FinalURL)
		if err != nil {
			continue
		}
		pl, err := parser.LinksOf(page, final, token, 0)
		if err != nil || len(pl.Follow) == 0 {
			continue // not a page with links (a type parse does not read)
		}
		root := u.Root
		if u.Depth == 0 {
			root = seedRootOf(u) // a seed is its own scope root, after its redirects
		}
		tmpl := message.Links{Header: message.Header{V: message.Version, Kind: message.KindLinks, Crawl: crawl}, Root: root,
			Parent: u.URL, Depth: u.Depth + 1}
		for _, m := range message.SplitLinks(tmpl, pl.Follow) {
			body, err := message.Encode(&m)
			if err != nil {
				return sent, err
			}
			entries = append(entries, queue.Entry{ID: fmt.Sprint(len(entries)), Body: body})
			names = append(names, frontier.Source(&m))
		}
		sent++
	}
	if err := st.NoteLinksSent(ctx, crawl, "relink", names); err != nil {
		return sent, err
	}
	if err := be.Queue.SendBatch(ctx, res.Schedule, entries); err != nil {
		return sent, fmt.Errorf("send the links of the pages read again: %w", err)
	}
	return sent, nil
}

// seedRootOf is the scope root of the links of u, a seed's page: where its redirects ended, as
// the fetcher tells parse.
func seedRootOf(u crawlstate.URL) string {
	if n, err := urlnorm.Normalize(u.Page.FinalURL); err == nil {
		return n.String()
	}
	return u.URL
}
