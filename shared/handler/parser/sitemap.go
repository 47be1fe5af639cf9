package parser

import (
	"context"
	"net/url"

	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
	"github.com/crawlstack/crawlstack/shared/crawl/web/sitemap"
)

// parseSitemap reads a page fetched as a sitemap: a robots.txt gives its Sitemap: lines, to fetch
// as sitemaps; a sitemap index its sitemaps; a sitemap its URLs, to admit as links one hop deeper.
// Schedule scopes and bounds them as it does any link. A file that is no sitemap is recorded with
// its error, like a page that does not parse.
func (h *Handler) parseSitemap(ctx context.Context, p *parsed, page warcfile.Page, final *url.URL, maxDepth int) (*parsed, error) {
	p.out.Sitemap = true
	if final.Path == "/robots.txt" {
		p.sitemaps = normalized(sitemap.FromRobots(page.Body))
	} else {
		sm, err := sitemap.Parse(page.Body)
		if err != nil {
			return h.parseError(ctx, p, err)
		}
		if sm.Truncated {
			h.log.Info("sitemap cut at the protocol's limits", "url", p.out.FinalURL, "entries", sitemap.MaxEntries, "bytes", sitemap.MaxBytes)
		}
		p.links = normalized(locs(sm.URLs))
		p.lastMod = lastMods(sm.URLs)
		p.sitemaps = normalized(locs(sm.Sitemaps))
	}
	p.out.OutLinks = append(append(p.out.OutLinks, p.links...), p.sitemaps...)
	if maxDepth >= 0 && p.page.Depth+1 > maxDepth {
		p.links, p.sitemaps = nil, nil
	}
	return p, nil
}

// lastMods are the lastmods of the entries that have one, in Unix seconds, by normalised URL.
func lastMods(es []sitemap.Entry) map[string]int64 {
	out := map[string]int64{}
	for _, e := range es {
		if u, err := urlnorm.Normalize(e.Loc); err == nil && !e.LastMod.IsZero() && e.LastMod.Unix() > 0 {
			out[u.String()] = e.LastMod.Unix()
		}
	}
	return out
}

func locs(es []sitemap.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Loc
	}
	return out
}

// normalized returns the valid URLs of raw, normalised; the others are dropped.
func normalized(raw []string) []string {
	var out []string
	for _, r := range raw {
		if u, err := urlnorm.Normalize(r); err == nil {
			out = append(out, u.String())
		}
	}
	return out
}
