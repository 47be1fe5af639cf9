package fetcher

import (
	"context"
	"errors"
	"net/http"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/recrawl"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
	"github.com/crawlstack/crawlstack/shared/crawl/web/httpfetch"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// The incremental recrawl's part in fetch (shared/crawl/recrawl): a URL that the previous crawl fetched
// is asked for with its validators, and a page found unchanged is stored as a revisit record.

// priorOf returns what the previous crawl knew of the URL key, or nil when there is no previous
// crawl or it did not fetch the page. A failed read only costs the conditional request: the page
// is fetched in full.
func (h *Handler) priorOf(ctx context.Context, previous, key, rawURL string) *recrawl.Prior {
	if previous == "" {
		return nil
	}
	u, err := h.urls.Get(ctx, previous, key)
	if errors.Is(err, table.ErrNotFound) {
		return nil
	}
	if err != nil {
		h.log.Warn("read the previous crawl's state of a URL: fetching it in full", "url", rawURL, "previous", previous, "err", err.Error())
		return nil
	}
	p, ok := recrawl.PriorOf(previous, u)
	if !ok {
		return nil
	}
	return &p
}

// conditional is ctx with the prior's validators for the request, if there is a prior.
func conditional(ctx context.Context, p *recrawl.Prior) context.Context {
	if p == nil {
		return ctx
	}
	return httpfetch.WithConditional(ctx, p.ETag, p.LastModified)
}

// revisit makes f's page a revisit record when the response shows it unchanged since the prior
// fetch. It returns false when the page is to be stored whole.
func revisit(f *fetched, p *recrawl.Prior) (bool, error) {
	if p == nil {
		return false, nil
	}
	rev, un, ok := p.Verdict(f.resp.Status, f.resp.Body)
	if !ok {
		return false, nil
	}
	rec, err := warcfile.EncodeRevisit(storedPage(f.resp), rev)
	if err != nil {
		return false, err
	}
	f.record, f.unchanged, f.prior = rec, &un, p
	return true, nil
}

// noteValidators adds to ref, the stored page of f, the validators and payload digest the next
// recrawl needs, and for a revisit what it refers to. A 304 may leave a validator out: the
// prior's holds.
func noteValidators(ref *crawlstate.Page, f *fetched) {
	ref.ETag, ref.LastModified = f.resp.Header.Get("ETag"), f.resp.Header.Get("Last-Modified")
	if f.unchanged == nil {
		ref.Digest = f.record.PayloadDigest()
		return
	}
	ref.Digest, ref.Unchanged = f.unchanged.Digest, f.unchanged
	if f.unchanged.Profile == recrawl.ProfileSitemapLastmod {
		// No record in this crawl: its stored page is the payload it refers to.
		p := f.unchanged.Payload
		ref.WARCKey, ref.Offset, ref.Length, ref.FinalURL = p.Key, p.Offset, p.Length, f.unchanged.URI
	}
	if ref.ETag == "" {
		ref.ETag = f.prior.ETag
	}
	if ref.LastModified == "" {
		ref.LastModified = f.prior.LastModified
	}
}

// unchangedBySitemap ends f without any request when its sitemap's lastmod says the page has not
// changed since the previous crawl got it: the URL is claimed, and f goes on to be recorded
// fetched and unchanged, its stored page the payload the previous crawl refers to, and parsed as
// an unchanged page (its previous record reused). handled is false when the page is to be fetched;
// f is nil when it is handled and another worker holds the URL.
func (h *Handler) unchangedBySitemap(ctx context.Context, f *fetched, previous string) (out *fetched, handled bool, err error) {
	if f.msg.LastMod.IsZero() || previous == "" || f.msg.Sitemap {
		return nil, false, nil
	}
	p := h.priorOf(ctx, previous, f.key, f.msg.URL)
	if p == nil || !p.NotModifiedSince(f.msg.LastMod) {
		return nil, false, nil
	}
	if dup, err := h.claim(ctx, f); dup || err != nil {
		return nil, true, err
	}
	un := p.Unchanged
	un.Profile = recrawl.ProfileSitemapLastmod
	f.unchanged, f.prior = &un, p
	f.resp = &httpfetch.Response{URL: un.URI, Status: http.StatusOK, Header: http.Header{}, FetchedAt: h.now()}
	return f, true, nil
}

// answered notes resp, the URL's last response (nil: none), for the crawl's counts of responses.
func (f *fetched) answered(resp *httpfetch.Response) {
	if resp != nil {
		f.status, f.bytes = resp.Status, int64(len(resp.Body))
	}
}

// change is what the recrawl found of the page of a URL that ends in state to.
func (f *fetched) change(to crawlstate.State) crawlstate.Change {
	switch {
	case to != crawlstate.Fetched:
		return ""
	case f.unchanged != nil:
		return crawlstate.Unchanged
	case f.recrawl:
		return crawlstate.Changed
	}
	return ""
}
