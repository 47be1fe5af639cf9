package crawlstate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// A crawl runs for as long as it needs: a polite crawl of one large site at a request a second
// runs for months. Every item a crawl writes expires a retention after the write (expiry), and
// an item never written again, a URL item above all, would expire under a crawl that runs longer
// than that: the table's TTL would delete it, and its URL, found again, would be admitted and
// fetched twice. So the crawl's items are renewed while it runs. Once RenewEvery has passed since
// the crawl started or was last renewed, its drain checks (package finish) call Renew, which moves
// the expiry of every item in the crawl's partitions to a retention from now, a slice of
// partitions per check, and records the renewal on the crawl item when the last partition is done.
//
// A crawl whose items are not renewed (one without drain checks, or whose checks stopped) admits
// no new URL once RenewEvery has passed since its last renewal (AdmissionOpen): its items still
// have MinItemLife to be fetched and parsed. A renewal costs a write unit per item (per kilobyte of
// it), once every RenewEvery: for a crawl at a page a second, about 2.6 million items a month
// (docs/state.md).

// The crawl item's attributes of a renewal.
const (
	attrRenewedAt = "renewedAt" // when the last renewal ended (Unix ms); the start until then
	attrRenewPart = "renewPart" // the partition the renewal under way is at
	attrRenewTo   = "renewTo"   // the expiry the renewal under way gives the items (Unix s)
)

// renewWidth is how many items of a partition a renewal writes at once.
const renewWidth = 16

// RenewEvery is how long after a crawl's start, or its last renewal, its items are renewed.
func (s *Runs) RenewEvery() time.Duration { return s.retention - MinItemLife }

// Renew renews the crawl's items if they are due (see above), spending at most about budget on
// it: it returns true once no renewal is due or under way, false while one is left to go on with
// at the next call. A renewal stopped halfway (a budget spent, a process gone) goes on from its
// partition; items renewed already are read again and left alone.
func (s *Runs) Renew(ctx context.Context, crawl string, budget time.Duration) (bool, error) {
	if s.kept {
		return true, nil // nothing expires: nothing to renew
	}
	// A crawl younger than RenewEvery has no renewal due or under way: every check of it would
	// otherwise read its crawl item a second time. Its start is read once and kept (Started).
	if start, err := s.Started(ctx, crawl); err == nil && !start.IsZero() && s.now().Sub(start) < s.RenewEvery() {
		return true, nil
	}
	deadline := s.now().Add(budget)
	it, err := s.t.Get(ctx, CrawlKey(crawl))
	if errors.Is(err, table.ErrNotFound) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("renew crawl %s: %w", crawl, err)
	}
	if !it.Has(attrRenewPart) {
		last := it.Int(attrRenewedAt)
		if last == 0 {
			last = it.Int(attrStarted)
		}
		if last == 0 || s.now().Sub(time.UnixMilli(last)) < s.RenewEvery() {
			return true, nil
		}
		it, err = s.startRenewal(ctx, crawl)
		if err != nil || it == nil {
			return false, err
		}
	}
	to := it.Int(attrRenewTo)
	for part := int(it.Int(attrRenewPart)); part < Shards; part++ {
		if s.now().After(deadline) {
			return false, nil
		}
		if err := s.renewPart(ctx, crawl, part, to); err != nil {
			return false, err
		}
		if err := s.stepRenewal(ctx, crawl, part); err != nil {
			return false, err
		}
	}
	return true, nil
}

// startRenewal marks a renewal under way from partition 0, to a retention from now. It returns
// nil when another check started one first.
func (s *Runs) startRenewal(ctx context.Context, crawl string) (table.Item, error) {
	to := s.now().Add(s.retention).Unix()
	it, err := s.t.Update(ctx, CrawlKey(crawl), table.Update{Set: map[string]any{attrRenewPart: int64(0), attrRenewTo: to}},
		table.And(table.ItemExists(), table.NotExists(attrRenewPart)))
	if _, raced := table.IsConditionFailed(err); raced {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("start renewing crawl %s: %w", crawl, err)
	}
	return it, nil
}

// renewPart gives every item of the crawl's partition that expires before to that expiry.
func (s *Runs) renewPart(ctx context.Context, crawl string, part int, to int64) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(renewWidth)
	p := crawlPart(crawl, part)
	err := s.t.Query(gctx, p, "", func(sort string, it table.Item) error {
		if !it.Has(table.TTLAttr) || it.Int(table.TTLAttr) >= to {
			return nil
		}
		key := table.Key{Part: p, Sort: sort}
		g.Go(func() error {
			_, err := s.t.Update(gctx, key, table.Update{Set: map[string]any{table.TTLAttr: to}},
				table.And(table.ItemExists(), table.Lt(table.TTLAttr, to)))
			if _, done := table.IsConditionFailed(err); done {
				return nil // deleted meanwhile, or renewed by another check
			}
			return err
		})
		return nil
	})
	if werr := g.Wait(); werr != nil {
		err = errors.Join(err, werr)
	}
	if err != nil {
		return fmt.Errorf("renew the items of crawl %s in %s: %w", crawl, p, err)
	}
	return nil
}

// stepRenewal records partition part renewed: the renewal goes on at the next one, or ends.
func (s *Runs) stepRenewal(ctx context.Context, crawl string, part int) error {
	u := table.Update{Set: map[string]any{attrRenewPart: int64(part + 1)}}
	if part+1 == Shards {
		u = table.Update{Set: map[string]any{attrRenewedAt: s.now().UnixMilli()}, Remove: []string{attrRenewPart, attrRenewTo}}
	}
	_, err := s.t.Update(ctx, CrawlKey(crawl), u, table.Eq(attrRenewPart, int64(part)))
	if _, passed := table.IsConditionFailed(err); passed {
		return nil // another check recorded it first
	}
	if err != nil {
		return fmt.Errorf("renew crawl %s: record %s done: %w", crawl, crawlPart(crawl, part), err)
	}
	return nil
}
