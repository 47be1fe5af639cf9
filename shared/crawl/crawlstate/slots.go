package crawlstate

import (
	"context"
	"fmt"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// IntervalOf is the gap between two requests to one host at rps requests per second (0: none).
func IntervalOf(rps float64) time.Duration {
	if rps <= 0 {
		return 0
	}
	return time.Duration(float64(time.Second) / rps)
}

// Slots is a run of a host's politeness slots reserved in one write: the i-th starts at
// Start + i*Interval.
type Slots struct {
	Start    time.Time
	Interval time.Duration
	// N is how many were reserved: fewer than asked when the rest would start beyond the horizon,
	// and 0 when the host is booked that far already.
	N int
	// Free is when the host's booking ends, after this reservation.
	Free time.Time
}

// At is the start of the i-th slot of the run.
func (s Slots) At(i int) time.Time { return s.Start.Add(time.Duration(i) * s.Interval) }

// ReserveSlot takes the host's next politeness slot, interval after the one before it, and
// returns how long until it starts (0: fetch now). The slot is the caller's: it fetches when the
// wait is over, without asking again, so every waiting worker gets its own slot instead of all of
// them racing for the next one. Every worker of every crawl shares the slots (invariant 4).
func (s *Hosts) ReserveSlot(ctx context.Context, host string, interval time.Duration) (time.Duration, error) {
	if max(interval, s.Throttled(host)) <= 0 {
		return 0, nil
	}
	got, err := s.ReserveSlots(ctx, host, interval, 1, 0)
	if err != nil {
		return 0, err
	}
	return max(got.Start.Sub(s.now()), 0), nil
}

// ReserveSlots takes up to n consecutive politeness slots of the host with one write, each
// interval after the one before, none starting horizon or more from now (0: no horizon). A
// scheduler that admits several URLs of a host books them all at once, and a horizon keeps one
// crawl from booking a host far into the future. With interval 0 it reserves nothing and every
// slot starts now.
//
// The write is a compare-and-swap on the host's next free time. Its first guess is the value this
// store last saw for the host, or, when that has passed, that the host is idle; a worker that
// raced it makes it go round again with the value the failed write returned.
//
// A host throttled for its errors (SlowDown) gets the wider of interval and its throttled gap, as
// this store last saw it (Throttled); the returned Slots.Interval is the gap used.
func (s *Hosts) ReserveSlots(ctx context.Context, host string, interval time.Duration, n int, horizon time.Duration) (Slots, error) {
	return s.reserveSlots(ctx, host, interval, n, horizon, 0, -1)
}

// ReserveRun books n consecutive slots of the host for a run of its URLs (a fetcher's, as it
// starts the run), as ReserveSlots does, but only when the first would start within `within` of
// now: a host booked further ahead is not written, and the returned Slots has N 0 and Free the
// start of the host's next free slot, for the run to wait in the queue until then, whole. A
// failed condition is one write, as in ReserveSlots; the write that books the run is the other.
func (s *Hosts) ReserveRun(ctx context.Context, host string, interval time.Duration, n int, within, horizon time.Duration) (Slots, error) {
	return s.reserveSlots(ctx, host, interval, n, horizon, 0, max(within, 0))
}

// reserveSlots is ReserveSlots with no slot starting sooner than lead from now: a host free
// earlier is booked from then, and the time between is left to others. With within not negative,
// nothing is booked when the first slot would start later than within from now.
func (s *Hosts) reserveSlots(ctx context.Context, host string, interval time.Duration, n int, horizon, lead, within time.Duration) (Slots, error) {
	now := s.now()
	interval = max(interval, s.Throttled(host))
	if interval <= 0 || n <= 0 {
		return Slots{Start: now, N: max(n, 0), Free: now}, nil
	}
	nowMs, step := now.UnixMilli(), interval.Milliseconds()
	earliest := nowMs + max(lead, 0).Milliseconds()
	next, known := int64(0), false
	if v, ok := s.slotSeen.Load(host); ok {
		next, known = v.(int64), true
	}
	for range 100 {
		start, cond := earliest, table.Or(table.NotExists(attrNext), table.Lt(attrNext, earliest+1))
		if known && next > earliest {
			start, cond = next, table.Eq(attrNext, next)
		}
		grant := n
		if within >= 0 && start > nowMs+within.Milliseconds() {
			grant = 0 // the run waits in the queue for the host, without a slot
		}
		if horizon > 0 {
			end := nowMs + horizon.Milliseconds()
			grant = min(grant, int(max((end-start+step-1)/step, 0)))
		}
		if grant == 0 {
			return Slots{Start: time.UnixMilli(start), Interval: interval, Free: time.UnixMilli(start)}, nil
		}
		free, tok := start+int64(grant)*step, randomTag()
		it, err := s.t.Update(ctx, slotKey(host), table.Update{Set: map[string]any{
			attrNext: free, table.TTLAttr: time.UnixMilli(free).Add(24 * time.Hour).Unix(), attrSlotTok: tok,
		}}, cond)
		cf, raced := table.IsConditionFailed(err)
		if raced && ownSlotWrite(cf.Item, tok) {
			it, err, raced = cf.Item, nil, false // its own booking, sent again
		}
		if !raced {
			if err != nil {
				return Slots{}, fmt.Errorf("reserve slots for %s: %w", host, err)
			}
			s.slotSeen.Store(host, free)
			s.learn(host, it)
			return Slots{Start: time.UnixMilli(start), Interval: interval, N: grant, Free: time.UnixMilli(free)}, nil
		}
		s.learn(host, cf.Item)
		known = cf.Item != nil && cf.Item.Has(attrNext)
		next = 0
		if known {
			next = cf.Item.Int(attrNext)
			s.slotSeen.Store(host, next) // what the host's item holds: the next guess starts there
		}
	}
	return Slots{}, errclass.Errorf(errclass.Internal, "reserve slots for %s: too many workers raced for them", host)
}

// attrSlotTok is the write token of the last conditional write of a host's slot item: a write
// that the SDK sends again because its answer was lost finds its own token there when its
// condition fails on its own first attempt, and takes that for its success. A write of another
// worker in between leaves another token: the replay is then taken as raced, which costs a
// booking or a probe some waiting, never two workers the same slot (and a failure in a row, whose
// ADD is replayed then, counts twice: the circuit opens one failure early). 9 bytes an item.
const attrSlotTok = "k"

// ownSlotWrite reports whether the slot item it was last written by the write with the token.
func ownSlotWrite(it table.Item, tok string) bool { return it.String(attrSlotTok) == tok }
