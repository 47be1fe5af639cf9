package crawlstate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// A crawl's life and its items' expiry. The table's time to live deletes items late, by up to
// days, but it does delete them: a URL item deleted while its crawl still admits URLs would let
// the URL in again, to be fetched twice. So the items expire with their crawl, not with their
// admission: every item of a crawl lives until the crawl's start plus DefaultRetention, and the
// crawl admits new URLs only during its first DefaultRetention less MinItemLife, so that the last
// URLs it admits still have MinItemLife to be fetched and parsed.

// MinItemLife is how long the crawl's items outlive its last admission at the least.
const MinItemLife = 7 * 24 * time.Hour

// attrStarted is when the crawl started (Unix milliseconds), on the crawl item.
const attrStarted = "startedAt"

// MarkStarted records when the crawl started, unless it is recorded already (a seed file read
// again, or a redelivered notification, keeps the first time), and that the crawl counts its
// end's counters from its start (attrEndCounted).
func (s *Store) MarkStarted(ctx context.Context, crawl string) error {
	_, err := s.t.Update(ctx, CrawlKey(crawl), table.Update{Set: map[string]any{attrStarted: s.now().UnixMilli(), attrEndCounted: true}},
		table.NotExists(attrStarted))
	if _, known := table.IsConditionFailed(err); known {
		return nil
	}
	if err != nil {
		return fmt.Errorf("mark crawl %s started: %w", crawl, err)
	}
	return nil
}

// Started returns when the crawl started, or the zero time for a crawl that has no start on
// record (one started before starts were recorded). A start once read is kept in memory.
func (s *Store) Started(ctx context.Context, crawl string) (time.Time, error) {
	if t, ok := s.starts.Load(crawl); ok {
		return t.(time.Time), nil
	}
	var start time.Time
	it, err := s.t.Get(ctx, CrawlKey(crawl))
	switch {
	case errors.Is(err, table.ErrNotFound):
	case err != nil:
		return time.Time{}, fmt.Errorf("read the start of crawl %s: %w", crawl, err)
	case it.Has(attrStarted):
		start = time.UnixMilli(it.Int(attrStarted))
	}
	s.starts.Store(crawl, start)
	return start, nil
}

// expiry is when the crawl's items may expire: its start plus DefaultRetention, or, for a crawl with no
// start on record, now plus DefaultRetention.
func (s *Store) expiry(ctx context.Context, crawl string) (int64, error) {
	start, err := s.Started(ctx, crawl)
	if err != nil {
		return 0, err
	}
	if start.IsZero() {
		start = s.now()
	}
	return start.Add(s.retention).Unix(), nil
}

// AdmissionOpen returns nil while the crawl may admit new URLs, and an error of class scope once
// it is older than DefaultRetention less MinItemLife (its items would expire too soon after). A
// crawl with no start on record is always open.
func (s *Store) AdmissionOpen(ctx context.Context, crawl string) error {
	start, err := s.Started(ctx, crawl)
	if err != nil || start.IsZero() {
		return err
	}
	if window := s.retention - MinItemLife; s.now().Sub(start) > window {
		return errclass.Errorf(errclass.Scope, "the crawl started %s ago and admits new URLs for %s only (its items live %s)",
			s.now().Sub(start).Round(time.Hour), window, s.retention)
	}
	return nil
}
