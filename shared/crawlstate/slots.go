package crawlstate

import (
	"context"
	"fmt"
	"time"

	"github.com/crawlstack/crawlstack/shared/errclass"
	"github.com/crawlstack/crawlstack/shared/table"
)

// ReserveSlot takes the host's next politeness slot, interval after the one before it, and
// returns how long until it starts (0: fetch now). The slot is the caller's: it fetches when the
// wait is over, without asking again, so every waiting worker gets its own slot instead of all of
// them racing for the next one. Every worker of every crawl shares the slots (invariant 4).
func (s *Store) ReserveSlot(ctx context.Context, host string, interval time.Duration) (time.Duration, error) {
	if interval <= 0 {
		return 0, nil
	}
	now := s.Now()
	cond := table.NotExists(attrNext) // first guess: nobody has used this host yet
	var next int64
	for range 100 { // compare-and-swap: only a worker that raced us makes it go round again
		start := max(now.UnixMilli(), next)
		_, err := s.t.Update(ctx, slotKey(host), table.Update{Set: map[string]any{
			attrNext: start + interval.Milliseconds(), table.TTLAttr: now.Add(24 * time.Hour).Unix(),
		}}, cond)
		cf, raced := table.IsConditionFailed(err)
		if !raced {
			if err != nil {
				return 0, fmt.Errorf("reserve slot for %s: %w", host, err)
			}
			return max(time.UnixMilli(start).Sub(now), 0), nil // 0 when the slot starts now
		}
		if cf.Item == nil || !cf.Item.Has(attrNext) {
			cond, next = table.NotExists(attrNext), 0
			continue
		}
		next = cf.Item.Int(attrNext)
		cond = table.Eq(attrNext, next)
	}
	return 0, errclass.Errorf(errclass.Internal, "reserve slot for %s: too many workers raced for it", host)
}
