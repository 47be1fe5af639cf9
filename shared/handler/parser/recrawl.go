package parser

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/records"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
	"github.com/crawlstack/crawlstack/shared/crawl/web/extract"
)

// The incremental recrawl's part in parse (shared/crawl/recrawl): a page that fetch found unchanged has
// a revisit record and no payload of its own. Its record reuses the previous crawl's record of the
// page, title, links and data, without parsing; its links are followed as they were, so that the
// recrawl reaches the same pages. Where that record cannot be reused (no records reader, the
// crawls' extraction settings differ, a sitemap, the record is not found), the payload that the
// revisit refers to is read and parsed as a fetched page's would be.

// PriorRecords reads the records files of earlier crawls (blob.Store).
type PriorRecords interface {
	Get(ctx context.Context, key string) ([]byte, error)
}

// priorFiles is how many earlier records files one handler keeps, decoded: a recrawl goes through
// the site in about the order of the crawl before, so that pages close in time share files. A
// records file holds one parse batch (tens of records of a few KB): 256 take about 5 to 20 MB.
const priorFiles = 256

// priorCache keeps the records of the earlier records files read lately, by URL.
type priorCache struct {
	once  sync.Once
	files *lru.Cache[string, map[string]records.Record]
	err   error // lru.New's, which fails only for a size below 1
}

// get returns the cache, made on first use: a crawl that is not a recrawl never needs it.
func (c *priorCache) get() (*lru.Cache[string, map[string]records.Record], error) {
	c.once.Do(func() { c.files, c.err = lru.New[string, map[string]records.Record](priorFiles) })
	return c.files, c.err
}

// unchangedPage fills p, the record of a page found unchanged, from the previous crawl's record of
// it; it returns false, with nothing filled, when that cannot be reused and the payload is to be
// parsed instead. A failed read of the earlier record is logged and falls back so.
func (h *Handler) unchangedPage(ctx context.Context, crawl string, p *parsed, un *message.Unchanged, maxDepth int) (bool, error) {
	p.out.Unchanged, p.out.Digest = true, un.Digest
	if h.priorReader == nil || un.Msg == "" || p.page.Sitemap {
		return false, nil
	}
	if same, err := h.sameParse(ctx, crawl, un.Crawl); err != nil || !same {
		return false, err
	}
	prev, ok, err := h.priorRecord(ctx, un.Crawl, un.Msg, p.page.URL)
	if err != nil {
		h.log.Warn("read the previous crawl's record of an unchanged page: parsing its payload", "url", p.page.URL, "err", err.Error())
		return false, nil
	}
	if !ok || prev.Class != "" || prev.Unchanged && prev.Digest != un.Digest {
		return false, nil
	}
	out := &p.out
	out.Title, out.Canonical, out.Charset, out.NoIndex, out.NoFollow = prev.Title, prev.Canonical, prev.Charset, prev.NoIndex, prev.NoFollow
	out.OutLinks, out.NoFollowLinks, out.Data, out.DataErrors = prev.OutLinks, prev.NoFollowLinks, prev.Data, prev.DataErrors
	out.Items, out.Text, out.TextTruncated, out.PDF = prev.Items, prev.Text, prev.TextTruncated, prev.PDF
	if out.OutLinks == nil {
		out.OutLinks = []string{}
	}
	if out.ContentType == "" { // a 304 need not say it
		out.ContentType = prev.ContentType
	}
	if out.ETag == "" {
		out.ETag, out.LastModified = prev.ETag, prev.LastModified
	}
	if !prev.NoFollow && (maxDepth < 0 || p.page.Depth+1 <= maxDepth) {
		for _, l := range prev.OutLinks {
			if !slices.Contains(prev.NoFollowLinks, l) {
				p.links = append(p.links, l)
			}
		}
	}
	return true, nil
}

// sameParse reports whether a page's record in crawl comes out as it did in prev: the same
// extraction fields and the same User-Agent (whose product token picks the robots meta tags).
func (h *Handler) sameParse(ctx context.Context, crawl, prev string) (bool, error) {
	if h.crawls == nil {
		return true, nil
	}
	now, err := h.crawls.For(ctx, crawl)
	if err != nil {
		return false, err
	}
	was, err := h.crawls.For(ctx, prev)
	if err != nil {
		return false, err
	}
	return now.UserAgent == was.UserAgent && sameFields(now, was), nil
}

// sameFields reports whether two crawls extract the same fields and items, and parse the same
// kinds besides HTML.
func sameFields(a, b *crawlspec.Crawl) bool {
	fields := func(c *crawlspec.Crawl) []extract.Field {
		if c.Spec == nil {
			return nil
		}
		return c.Spec.Extract
	}
	rules := func(c *crawlspec.Crawl) []extract.Rule {
		if c.Spec == nil {
			return nil
		}
		return c.Spec.Items
	}
	same := func(x, y any, empty bool) bool { return empty || reflect.DeepEqual(x, y) }
	fa, fb, ra, rb := fields(a), fields(b), rules(a), rules(b)
	return same(fa, fb, len(fa) == 0 && len(fb) == 0) && same(ra, rb, len(ra) == 0 && len(rb) == 0) &&
		slices.Equal(a.Parse, b.Parse)
}

// priorRecord finds url's record in the records file that the previous crawl's parse message msg
// was stored in.
func (h *Handler) priorRecord(ctx context.Context, prev, msg, url string) (records.Record, bool, error) {
	key, err := h.parsed.RecordsOf(ctx, prev, msg)
	if err != nil || key == "" {
		return records.Record{}, false, err
	}
	cache, err := h.prior.get()
	if err != nil {
		return records.Record{}, false, fmt.Errorf("cache of earlier records files: %w", err)
	}
	byURL, ok := cache.Get(key)
	if !ok {
		b, err := h.priorReader.Get(ctx, key)
		if err != nil {
			return records.Record{}, false, fmt.Errorf("read %s: %w", key, err)
		}
		byURL = map[string]records.Record{}
		if err := records.Lines(key, b, func(r records.Record) error {
			byURL[r.URL] = r
			return nil
		}); err != nil {
			return records.Record{}, false, err
		}
		cache.Add(key, byURL)
	}
	r, ok := byURL[url]
	return r, ok, nil
}

// parseUnchanged makes the record of a page found unchanged: the previous crawl's record reused,
// or its payload parsed.
func (h *Handler) parseUnchanged(ctx context.Context, crawl string, p *parsed, un *message.Unchanged, pages *spanReader) (*parsed, error) {
	cs, err := h.crawlSettings(ctx, crawl)
	if err != nil {
		return nil, err
	}
	reused, err := h.unchangedPage(ctx, crawl, p, un, cs.maxDepth)
	if err != nil {
		return nil, err
	}
	if reused {
		return p, nil
	}
	raw, err := pages.read(ctx, un.Payload)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", un.Payload.Key, err)
	}
	page, err := warcfile.Decode(raw)
	if err != nil {
		return h.parseError(ctx, p, err)
	}
	if p.out.ContentType == "" {
		p.out.ContentType = page.Header.Get("Content-Type")
	}
	return h.parseBody(ctx, crawl, p, page, nil)
}
