package crawlstate

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// Adaptive per-host throttling, shared by every worker through the host's politeness slot item: a
// 429 from a host doubles the gap between its requests (SlowDown; the fetcher decides which
// answers ask for it), up to MaxThrottleGap, the floor rate; the extra gap then halves every
// ThrottleHalfLife by itself, without a write, so a host that answers well again is soon back at
// its configured rate. Every slot booked for the host (ReserveSlots) takes the larger of the
// configured gap and the host's throttled one.

const (
	// ThrottleHalfLife is how fast a host's throttled gap decays once its errors stop.
	ThrottleHalfLife = 30 * time.Second
	// MaxThrottleGap is the widest throttled gap: the floor of a throttled host's rate.
	MaxThrottleGap = 30 * time.Second
	// minThrottleGap is the least throttled gap: that of a host with no configured rate.
	minThrottleGap = 250 * time.Millisecond
	// raiseEvery bounds how often a host's gap is raised: the errors of one burst, seen by many
	// workers at once, double it once.
	raiseEvery = time.Second
)

// On the slot item: the throttled gap (ms) and when it was set (Unix ms).
const (
	attrSlowGap = "slowGap"
	attrSlowAt  = "slowAt"
)

// throttle is a host's throttled gap as set at a time, both in milliseconds.
type throttle struct{ gap, at int64 }

// at is the throttled gap left at now: halved for every ThrottleHalfLife since it was set, and
// none once it is under a tenth of a second.
func (t throttle) left(now time.Time) time.Duration {
	if t.gap <= 0 {
		return 0
	}
	el := max(now.UnixMilli()-t.at, 0)
	g := time.Duration(float64(t.gap)*math.Pow(0.5, float64(el)/float64(ThrottleHalfLife.Milliseconds()))) * time.Millisecond
	if g < 100*time.Millisecond {
		return 0
	}
	return g
}

// Throttled returns the host's throttled gap now, as this store last saw it (0: none). The store
// learns it from every write of the host's slot item (ReserveSlots, SlowDown).
func (s *Hosts) Throttled(host string) time.Duration {
	v, ok := s.throttles.Load(host)
	if !ok {
		return 0
	}
	return v.(throttle).left(s.now())
}

// learn keeps the throttled gap and the circuit that the host's slot item holds.
func (s *Hosts) learn(host string, it table.Item) {
	if it != nil && it.Has(attrSlowAt) {
		s.throttles.Store(host, throttle{gap: it.Int(attrSlowGap), at: it.Int(attrSlowAt)})
	}
	s.learnCircuit(host, it)
}

// SlowDown raises the host's throttled gap after an answer that says it is overloaded: to twice
// the gap it has now (the configured interval, or the throttled gap if wider), at least
// minThrottleGap and at most MaxThrottleGap. A gap raised less than a second ago is left as it is. It returns the host's
// throttled gap now. A raise is noted for the crawl's summary and status (Counters.Throttled),
// unless crawl is "".
func (s *Hosts) SlowDown(ctx context.Context, crawl, host string, interval time.Duration) (time.Duration, error) {
	return s.SlowDownFor(ctx, crawl, host, interval, Why429)
}

// Why a host's gap was raised, as its note for the summary and status says (ThrottledHost.Why).
const (
	Why429  = "429"  // the host answered 429 Too Many Requests
	Why5xx  = "5xx"  // the host's answers turned to failures (5xx, timeouts, no connection)
	WhySlow = "slow" // the host's answers turned slow
)

// SlowDownFor is SlowDown for another reason than a 429: why is one of Why429, Why5xx, WhySlow.
func (s *Hosts) SlowDownFor(ctx context.Context, crawl, host string, interval time.Duration, why string) (time.Duration, error) {
	now := s.now()
	gap, tok := min(max(2*max(interval, s.Throttled(host)), minThrottleGap), MaxThrottleGap), randomTag()
	it, err := s.t.Update(ctx, slotKey(host), table.Update{Set: map[string]any{
		attrSlowGap: gap.Milliseconds(), attrSlowAt: now.UnixMilli(), table.TTLAttr: now.Add(24 * time.Hour).Unix(), attrSlotTok: tok,
	}}, table.Or(table.NotExists(attrSlowAt), table.Lt(attrSlowAt, now.Add(-raiseEvery).UnixMilli())))
	if cf, recent := table.IsConditionFailed(err); recent && ownSlotWrite(cf.Item, tok) {
		it, err = cf.Item, nil // its own raise, sent again
	} else if recent {
		s.learn(host, cf.Item) // raised a moment ago by another worker
		return s.Throttled(host), nil
	}
	if err != nil {
		return 0, fmt.Errorf("slow down %s: %w", host, err)
	}
	s.learn(host, it)
	if crawl != "" {
		if err := s.noteThrottled(ctx, crawl, host, gap, now, why); err != nil {
			return gap, err
		}
	}
	return gap, nil
}
