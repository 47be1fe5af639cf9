package scheduler

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawl/frontier"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// seedSender packs a crawl's seed URLs into Links messages and sends them to the schedule queue
// in batches, keeping the name of each message (frontier.Source) for the crawl's note of the
// Links messages sent, which the end waits for.
type seedSender struct {
	h       *Handler
	crawl   string
	batch   []string // URLs not yet packed
	entries []queue.Entry
	names   []string
	// hold keeps every message packed until finish, for its caller to name them before they are
	// sent (an extension of a running crawl, extend.go).
	hold bool
}

// add takes one seed URL; a full message's worth is packed.
func (s *seedSender) add(ctx context.Context, u string) error {
	s.batch = append(s.batch, u)
	if len(s.batch) == message.MaxLinks {
		return s.pack(ctx, message.Links{Header: message.Header{Crawl: s.crawl}})
	}
	return nil
}

// sitemaps adds, for a spec that reads sitemaps, the Links message of each seed origin's
// robots.txt and /sitemap.xml, marked as sitemaps.
func (s *seedSender) sitemaps(ctx context.Context, spec *crawlspec.Spec) error {
	if err := s.pack(ctx, message.Links{Header: message.Header{Crawl: s.crawl}}); err != nil {
		return err
	}
	s.batch = append(s.batch, spec.SitemapURLs()...)
	return s.pack(ctx, message.Links{Header: message.Header{Crawl: s.crawl}, Sitemap: true})
}

// pack puts the URLs taken so far into messages like tmpl, and sends every full batch of them.
func (s *seedSender) pack(ctx context.Context, tmpl message.Links) error {
	for _, m := range message.SplitLinks(tmpl, s.batch) {
		b, err := message.Encode(m)
		if err != nil {
			return err
		}
		s.names = append(s.names, frontier.Source(&m))
		s.entries = append(s.entries, queue.Entry{ID: strconv.Itoa(len(s.entries)), Body: b})
		if len(s.entries) == queue.MaxBatch && !s.hold {
			if err := s.send(ctx); err != nil {
				return err
			}
		}
	}
	s.batch = s.batch[:0]
	return nil
}

// finish packs and sends what is left.
func (s *seedSender) finish(ctx context.Context) error {
	if err := s.pack(ctx, message.Links{Header: message.Header{Crawl: s.crawl}}); err != nil {
		return err
	}
	if s.hold {
		return nil
	}
	return s.send(ctx)
}

// send sends the messages packed, in batches.
func (s *seedSender) send(ctx context.Context) error {
	for batch := range slices.Chunk(s.entries, queue.MaxBatch) {
		if err := s.h.send.SendBatch(ctx, s.h.cfg.ScheduleQueue, batch); err != nil {
			return fmt.Errorf("send seed links: %w", err)
		}
	}
	s.entries = s.entries[:0]
	return nil
}
