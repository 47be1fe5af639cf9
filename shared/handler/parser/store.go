package parser

// Storing a batch's results: its Links messages sent, its records streamed and stored in one
// records file, and each message marked parsed.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/crawlstack/crawlstack/shared/crawl/frontier"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/records"
	"github.com/crawlstack/crawlstack/shared/handler/sqsbatch"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// storeAll writes each crawl's records, sends the links and marks the messages parsed. It returns
// the message ids to deliver again.
func (h *Handler) storeAll(ctx context.Context, works []work) []string {
	return message.EachCrawl(works, func(w work) string { return w.crawl }, func(crawl string, works []work) []string {
		return h.storeCrawl(ctx, crawl, works)
	})
}

func (h *Handler) storeCrawl(ctx context.Context, crawl string, works []work) []string {
	retryAll := func(err error) []string {
		h.log.Error("storing parse results failed", "crawl", crawl, "messages", len(works), "err", err.Error())
		ids := make([]string, len(works))
		for i, w := range works {
			ids[i] = w.rec.MessageId
		}
		return ids
	}
	var pages []parsed
	for _, w := range works {
		pages = append(pages, w.pages...)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	var entries []queue.Entry
	for _, p := range pages {
		if err := enc.Encode(p.out); err != nil {
			return retryAll(err)
		}
	}
	var names []string // the Links messages' frontier.Source, for the marks
	for _, m := range packLinks(crawl, pages) {
		body, err := message.Encode(m)
		if err != nil {
			return retryAll(err)
		}
		entries = append(entries, queue.Entry{ID: strconv.Itoa(len(entries)), Body: body})
		names = append(names, frontier.Source(&m))
	}
	// The links go out before the records are stored: a failed send then leaves no records behind
	// for the redelivery to store a second time, while links sent twice are deduplicated by schedule.
	if err := h.send.SendBatch(ctx, h.cfg.ScheduleQueue, entries); err != nil {
		// Some links may be sent already; the redelivery sends them again and schedule dedups.
		return retryAll(fmt.Errorf("send links: %w", err))
	}
	key := records.Key(crawl, h.now(), strings.ToLower(rand.Text()))
	// Streamed before they are stored, for the same reason as the links: a failed send leaves no
	// records file behind to be stored a second time; the stream is at least once.
	if err := h.streamRecords(ctx, crawl, key, pages); err != nil {
		return retryAll(err)
	}
	if err := h.blobs.Put(ctx, key, buf.Bytes(), records.ContentType); err != nil {
		return retryAll(fmt.Errorf("put %s: %w", key, err))
	}
	// One mark per message, for all its pages, naming the Links messages sent: the crawl's end
	// waits for each to be admitted. The links of the batch's messages are packed together, so
	// each mark names them all: a message whose mark fails sends its own again when it comes back.
	return sqsbatch.Each(len(works), len(works), func(i int) string { return works[i].rec.MessageId }, func(i int) error {
		made, err := h.parsed.MarkMessageParsedPages(ctx, crawl, works[i].name, key, names, len(works[i].pages))
		if err != nil {
			h.log.Error("mark parsed", "message", works[i].name, "err", err.Error())
			return err
		}
		// Counted by the delivery whose write made the mark: once, whichever delivery that is.
		if n := works[i].robotsRefused; made && n > 0 {
			if err := h.counters.CountRobotsRefused(ctx, crawl, int64(n)); err != nil {
				h.log.Warn("count the links robots.txt refused", "message", works[i].name, "err", err.Error())
			}
		}
		return nil
	})
}

// packLinks puts the links of the batch's pages into as few Links messages as schedule can take:
// one list per scope root, depth and kind (pages, or sitemaps to read), each link once, split at
// message.MaxLinks. Pages of one site link mostly to the same pages, so a batch's links shrink a
// lot, and schedule receives, admits and deletes a message per batch rather than one per page. A
// list from one page names it as the parent.
func packLinks(crawl string, pages []parsed) []message.Links {
	type group struct {
		tmpl    message.Links
		pages   int
		urls    []string
		seen    map[string]bool
		lastMod []int64 // each URL's, when a sitemap gives any
	}
	var order []*group
	groups := map[string]*group{}
	add := func(p parsed, urls []string, sitemap bool) {
		if len(urls) == 0 {
			return
		}
		k := p.page.Root + "\x00" + strconv.Itoa(p.page.Depth) + "\x00" + strconv.FormatBool(sitemap)
		g := groups[k]
		if g == nil {
			g = &group{tmpl: message.Links{Header: message.Header{Crawl: crawl}, Root: p.page.Root, Parent: p.page.URL,
				Depth: p.page.Depth + 1, Sitemap: sitemap}, seen: map[string]bool{}}
			groups[k] = g
			order = append(order, g)
		}
		if g.pages++; g.pages > 1 {
			g.tmpl.Parent = ""
		}
		for _, l := range urls {
			if !g.seen[l] {
				g.seen[l] = true
				g.urls = append(g.urls, l)
				if lm := p.lastMod[l]; lm > 0 && !sitemap {
					g.lastMod = append(g.lastMod, make([]int64, len(g.urls)-len(g.lastMod)-1)...)
					g.lastMod = append(g.lastMod, lm)
				}
			}
		}
	}
	for _, p := range pages {
		add(p, p.links, false)
		add(p, p.sitemaps, true)
	}
	var out []message.Links
	for _, g := range order {
		if len(g.lastMod) > 0 {
			g.lastMod = append(g.lastMod, make([]int64, len(g.urls)-len(g.lastMod))...)
		}
		out = append(out, message.SplitLinksLastMod(g.tmpl, g.urls, g.lastMod)...)
	}
	return out
}
