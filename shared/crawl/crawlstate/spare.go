package crawlstate

import (
	"context"
	"sync"
	"time"
)

// A scheduler books a host's politeness slots in runs, one write per host and batch
// (ReserveSlots). In a wide crawl a batch brings a host one URL or two, so that write was paid for
// nearly every URL. BookSlots books a few spare slots with the ones it needs, in the same write,
// and keeps them in the store for the host's next URLs: while they last, a batch books the host
// without writing. A spare is the store's alone, reserved on the host's item like any other slot,
// so politeness holds; one that goes by unused is a gap in the host's schedule, at most spare
// slots a store, once its batches stop bringing the host URLs.

// Booked is what BookSlots gave: a slot for each of the first len(At) URLs, in order.
type Booked struct {
	// At are the slots' starts, earliest first.
	At []time.Time
	// Interval is the gap the slots were booked at (the host's throttled gap when it is wider).
	Interval time.Duration
	// Free is when the host's booking ends: the URLs beyond len(At) wait until then for theirs.
	Free time.Time
}

// spares are a host's slots booked and not yet given out, at one interval.
type spares struct {
	mu sync.Mutex
	at []int64 // Unix ms, ascending
}

type spareKey struct {
	host     string
	interval time.Duration
}

// BookSlots books n slots of the host, as ReserveSlots does (none horizon or more from now), and
// spare more in the same write, kept for this store's next bookings of the host at that interval.
// No slot it gives starts sooner than lead from now: a message sent for a slot sooner would reach
// its fetcher too late, and the fetcher would book another. Spares are given out first, earliest
// first, while they start lead or more from now and the host is not throttled to a wider gap than
// they were booked at; the others are dropped. A host free sooner is booked from lead on.
func (s *Hosts) BookSlots(ctx context.Context, host string, interval time.Duration, n int, horizon, lead time.Duration, spare int) (Booked, error) {
	now := s.now()
	gap := max(interval, s.Throttled(host))
	if gap <= 0 || n <= 0 {
		at := make([]time.Time, max(n, 0))
		for i := range at {
			at[i] = now
		}
		return Booked{At: at, Interval: gap, Free: now}, nil
	}
	key := spareKey{host, gap}
	v, _ := s.spare.LoadOrStore(key, &spares{})
	sp := v.(*spares)
	sp.mu.Lock()
	defer func() {
		if len(sp.at) == 0 {
			s.spare.CompareAndDelete(key, sp) // a store of a wide crawl's many hosts keeps only those with spares
		}
		sp.mu.Unlock()
	}()
	nowMs := now.UnixMilli()
	limit := int64(-1) // the horizon, in Unix ms (-1: none)
	if horizon > 0 {
		limit = nowMs + horizon.Milliseconds()
	}
	var out Booked
	out.Interval, out.Free = gap, now
	kept := sp.at[:0]
	for _, t := range sp.at {
		switch {
		case t < nowMs+lead.Milliseconds():
			// too soon to use, or gone by unused
		case len(out.At) < n && (limit < 0 || t < limit):
			out.At = append(out.At, time.UnixMilli(t))
		default:
			kept = append(kept, t)
		}
	}
	sp.at = kept
	if len(out.At) == n {
		return out, nil // every URL has its slot, without a write
	}
	need := n - len(out.At)
	got, err := s.reserveSlots(ctx, host, interval, need+max(spare, 0), horizon, lead, -1)
	if err != nil {
		return out, err // the spares given out are still the caller's
	}
	out.Interval, out.Free = got.Interval, got.Free
	for i := range got.N {
		if i < need {
			out.At = append(out.At, got.At(i))
		} else if got.Interval == gap {
			sp.at = append(sp.at, got.At(i).UnixMilli())
		}
	}
	return out, nil
}

// SlotGuess guesses, without a read or a write, when the kth (from 0) of the host's next slots
// that this store books at interval will start: its spares first, then the host's next free slot
// as this store last saw it, but none sooner than lead from now. Schedule groups the URLs it
// admits by it, before it books them (frontier.groups): a guess that turns out wrong costs a fetch
// message more, nothing else.
func (s *Hosts) SlotGuess(host string, interval, lead time.Duration, k int) time.Time {
	now := s.now()
	gap := max(interval, s.Throttled(host))
	if gap <= 0 {
		return now
	}
	earliest := now.Add(lead).UnixMilli()
	if v, ok := s.spare.Load(spareKey{host, gap}); ok {
		sp := v.(*spares)
		sp.mu.Lock()
		usable := 0
		for _, t := range sp.at {
			if t >= earliest {
				if usable == k {
					sp.mu.Unlock()
					return time.UnixMilli(t)
				}
				usable++
			}
		}
		sp.mu.Unlock()
		k -= usable
	}
	next := earliest
	if v, ok := s.slotSeen.Load(host); ok {
		next = max(next, v.(int64))
	}
	return time.UnixMilli(next + int64(k)*gap.Milliseconds())
}
