package fetcher

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/crawlstack/crawlstack/shared/crawlstate"
	"github.com/crawlstack/crawlstack/shared/errclass"
	"github.com/crawlstack/crawlstack/shared/message"
	"github.com/crawlstack/crawlstack/shared/queue"
	"github.com/crawlstack/crawlstack/shared/sqsbatch"
	"github.com/crawlstack/crawlstack/shared/urlnorm"
	"github.com/crawlstack/crawlstack/shared/warcfile"
)

// PagesPrefix is where fetch writes its WARC files.
const PagesPrefix = "pages/"

// storeAll writes the batch's pages as one WARC file per crawl, sends their parse messages and
// records them as fetched. It returns the message ids that must be delivered again.
func (h *Handler) storeAll(ctx context.Context, pages []fetched) []string {
	order, byCrawl := message.ByCrawl(pages, func(p fetched) string { return p.msg.Crawl })
	var failed []string
	for _, crawl := range order {
		failed = append(failed, h.storeCrawl(ctx, crawl, byCrawl[crawl])...)
	}
	return failed
}

func (h *Handler) storeCrawl(ctx context.Context, crawl string, pages []fetched) []string {
	retryAll := func(err error) []string {
		h.log.Error("storing fetched pages failed", "crawl", crawl, "pages", len(pages), "err", err.Error())
		ids := make([]string, len(pages))
		for i, p := range pages {
			ids[i] = p.rec.MessageId
			if err := h.state.Release(ctx, crawl, p.key, p.owner); err != nil {
				h.log.Warn("release after a failed store", "url", p.msg.URL, "err", err.Error())
			}
		}
		return ids
	}
	recs := make([]warcfile.Page, len(pages))
	for i, p := range pages {
		recs[i] = warcfile.Page{URL: p.resp.URL, Status: p.resp.Status, Header: p.resp.Header, Body: p.resp.Body,
			FetchedAt: p.resp.FetchedAt}
	}
	file, spans, err := warcfile.Encode(recs)
	if err != nil {
		return retryAll(err)
	}
	now := h.Now().UTC()
	key := fmt.Sprintf("%s%s/%s/%s.warc.gz", PagesPrefix, crawl, now.Format("2006/01/02"), batchID())
	if err := h.pages.Put(ctx, key, file, warcfile.ContentType); err != nil {
		return retryAll(fmt.Errorf("put %s: %w", key, err))
	}
	entries := make([]queue.Entry, len(pages))
	for i, p := range pages {
		body, err := message.Encode(message.Parse{Header: message.Header{Crawl: crawl}, URL: p.msg.URL,
			FinalURL: p.resp.URL, Root: p.msg.Root, Depth: p.msg.Depth, Status: p.resp.Status,
			ContentType: p.resp.Header.Get("Content-Type"), FetchedAt: p.resp.FetchedAt,
			WARC: message.Ref{Key: key, Offset: spans[i].Offset, Length: spans[i].Length}})
		if err != nil {
			return retryAll(err)
		}
		entries[i] = queue.Entry{ID: strconv.Itoa(i), Body: body}
	}
	sendErr := h.send.SendBatch(ctx, h.cfg.ParseQueue, entries)
	var be *queue.BatchError
	if sendErr != nil && !errors.As(sendErr, &be) {
		return retryAll(fmt.Errorf("send parse messages: %w", sendErr))
	}
	return sqsbatch.Each(len(pages), len(pages), func(i int) string { return pages[i].rec.MessageId }, func(i int) error {
		p := pages[i]
		if be != nil && be.Failed[strconv.Itoa(i)] != nil {
			if err := h.state.Release(ctx, crawl, p.key, p.owner); err != nil {
				h.log.Warn("release after a failed send", "url", p.msg.URL, "err", err.Error())
			}
			return be.Failed[strconv.Itoa(i)]
		}
		if err := h.finish(ctx, &p, crawlstate.Fetched, nil); err != nil {
			// The page is stored and its parse message sent; the redelivery will fetch it again.
			h.log.Error("record fetched", "url", p.msg.URL, "err", err.Error())
			return err
		}
		h.recordRedirectTarget(ctx, crawl, p)
		return nil
	})
}

// recordRedirectTarget marks the URL a redirect ended on as known, so that a link to it later does
// not fetch the same page again. It is an optimisation: a failure is only logged.
func (h *Handler) recordRedirectTarget(ctx context.Context, crawl string, p fetched) {
	final, err := urlnorm.Normalize(p.resp.URL)
	if err != nil || final.String() == p.msg.URL {
		return
	}
	key := urlnorm.Key(final.String())
	cause := errclass.Errorf(errclass.Dup, "fetched as the redirect target of %s", p.msg.URL)
	added, err := h.state.Reject(ctx, crawl, key, final.String(), p.msg.Depth, cause)
	if err == nil && !added {
		err = h.state.SkipQueued(ctx, crawl, key, cause) // queued but not yet claimed: skip it
	}
	if err != nil {
		h.log.Warn("record the redirect target", "url", final.String(), "err", err.Error())
	}
}

// batchID names one WARC file: random, so concurrent and repeated batches never collide.
func batchID() string { return strings.ToLower(rand.Text()) }
