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
// the URL in again, to be fetched twice. Every item a crawl writes expires a retention
// (DefaultRetention) after the write, and a crawl that runs longer has its items renewed by its
// drain checks (renew.go): a crawl admits new URLs while its items were renewed, or it started,
// less than RenewEvery (the retention less MinItemLife) ago, so that the last URLs it admits still
// have MinItemLife to be fetched and parsed.

// MinItemLife is how long the crawl's items outlive its last admission at the least.
const MinItemLife = 7 * 24 * time.Hour

// attrStarted is when the crawl started (Unix milliseconds), on the crawl item.
const attrStarted = "startedAt"

// MarkStarted records when the crawl started, unless it is recorded already (a seed file read
// again, or a redelivered notification, keeps the first time), and that the crawl counts its
// end's counters from its start (attrEndCounted).
func (s *Runs) MarkStarted(ctx context.Context, crawl string) error {
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
func (s *Runs) Started(ctx context.Context, crawl string) (time.Time, error) {
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

// expiry is when an item the crawl writes now may expire: a retention from now. A crawl that runs
// longer has its older items renewed (Renew).
func (s *Runs) expiry(context.Context, string) (int64, error) {
	return s.now().Add(s.retention).Unix(), nil
}

// AdmissionOpen returns nil while the crawl may admit new URLs, and an error of class scope once
// its items were last renewed, or it started, more than RenewEvery ago (its items would expire
// too soon after): a crawl whose drain checks renew its items stays open for as long as it runs.
// A crawl with no start on record, or on a table that keeps items past their expiry (the
// embedded one), is always open. The crawl item is read again only once the
// crawl is older than RenewEvery, at most once per renewCheck.
func (s *Runs) AdmissionOpen(ctx context.Context, crawl string) error {
	if s.kept {
		return nil // no item of the crawl expires (the embedded table): always open
	}
	start, err := s.Started(ctx, crawl)
	if err != nil || start.IsZero() || s.now().Sub(start) <= s.RenewEvery() {
		return err
	}
	last, err := s.renewedAt(ctx, crawl)
	if err != nil {
		return err
	}
	if last.Before(start) {
		last = start
	}
	if age := s.now().Sub(last); age > s.RenewEvery() {
		return errclass.Errorf(errclass.Scope, "the crawl's items were last renewed %s ago, and a crawl admits new URLs for %s after a renewal only "+
			"(its items live %s; its drain checks renew them)", age.Round(time.Hour), s.RenewEvery(), s.retention)
	}
	return nil
}

// renewCheck is how long a store keeps a crawl's last renewal once read.
const renewCheck = time.Minute

// renewedAt is when the crawl's items were last renewed (zero for never), as read at most once
// per renewCheck.
func (s *Runs) renewedAt(ctx context.Context, crawl string) (time.Time, error) {
	if r, ok := s.renewals.Load(crawl); ok {
		if seen := r.(renewSeen); s.now().Sub(seen.readAt) < renewCheck {
			return seen.at, nil
		}
	}
	it, err := s.t.Get(ctx, CrawlKey(crawl))
	if err != nil && !errors.Is(err, table.ErrNotFound) {
		return time.Time{}, fmt.Errorf("read the renewal of crawl %s: %w", crawl, err)
	}
	var at time.Time
	if ms := it.Int(attrRenewedAt); ms > 0 {
		at = time.UnixMilli(ms)
	}
	s.renewals.Store(crawl, renewSeen{at: at, readAt: s.now()})
	return at, nil
}

// renewSeen is a crawl's last renewal as read at readAt.
type renewSeen struct{ at, readAt time.Time }
