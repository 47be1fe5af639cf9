package fetcher

import (
	"context"
	"sync"
	"time"
)

// An invocation lives as long as the longest run of its batch: a run waits in place for each of
// its slots (runs.go). A URL of another host that finds its host booked further ahead than it
// waits in place (MaxInlineWait) waits in place all the same when its slot comes before the
// batch's runs end: the invocation is alive then anyway, where the queue would cost a message, a
// receive, another claim and, when it comes back alone, an invocation, a WARC file and a parse
// message of its own (the realistic crawl's lone URLs of its largest hosts, whose runs booked them
// ahead, went back so about a hundred times a crawl in some rounds, and the small batches they
// came back in doubled its invocations).

// lifetime is how long a batch's runs keep its invocation: the last slot they booked.
type lifetime struct {
	mu    sync.Mutex
	until time.Time
	// pending are the runs that have not booked yet; booked is closed when none is left.
	pending map[*runLane]bool
	booked  chan struct{}
	// waits are the places of the batch's URLs waiting in place beside its runs (waiting).
	waits chan struct{}
	// inv is the invocation the batch is worked on in, when it tops up (topup.go): it is kept
	// until the last slot of any of its batches' runs.
	inv *invocation
}

type lifetimeKey struct{}

// withLifetime returns ctx carrying the lifetime of a batch whose run lanes are runs, worked on
// by workers at once: a quarter of them may wait in place beside the runs (waiting).
func withLifetime(ctx context.Context, runs []*runLane, workers int) context.Context {
	lt := &lifetime{pending: map[*runLane]bool{}, booked: make(chan struct{}), inv: invocationOf(ctx),
		waits: make(chan struct{}, max(workers/4, 1))}
	for _, l := range runs {
		lt.pending[l] = true
	}
	if len(lt.pending) == 0 {
		close(lt.booked)
	}
	return context.WithValue(ctx, lifetimeKey{}, lt)
}

// lifetimeOf returns the lifetime of the batch of ctx, or nil.
func lifetimeOf(ctx context.Context) *lifetime {
	lt, _ := ctx.Value(lifetimeKey{}).(*lifetime)
	return lt
}

// book notes that run l holds slots up to last (zero: none, it went back or ended), or ended
// without booking.
func (lt *lifetime) book(l *runLane, last time.Time) {
	if lt == nil {
		return
	}
	lt.inv.book(last)
	lt.mu.Lock()
	defer lt.mu.Unlock()
	if last.After(lt.until) {
		lt.until = last
	}
	if lt.pending[l] {
		delete(lt.pending, l)
		if len(lt.pending) == 0 {
			close(lt.booked)
		}
	}
}

// bookedUntil is the last slot that the batch's runs, and the invocation's other batches', have
// booked so far (zero: none, or no lifetime).
func (lt *lifetime) bookedUntil() time.Time {
	if lt == nil {
		return time.Time{}
	}
	lt.mu.Lock()
	defer lt.mu.Unlock()
	return later(lt.until, lt.inv.bookedUntil())
}

// stays reports whether the batch's runs keep the invocation until at: it waits up to
// MaxHeldWait for the runs that have not booked yet (they start with the batch, and book as
// their first URL comes), and a run that has not booked by then does not count.
func (lt *lifetime) stays(ctx context.Context, at time.Time) bool {
	if lt == nil {
		return false
	}
	t := time.NewTimer(MaxHeldWait)
	defer t.Stop()
	select {
	case <-lt.booked:
	case <-t.C:
	case <-ctx.Done():
		return false
	}
	return !at.After(lt.bookedUntil())
}

// waiting takes one of the batch's places for a URL that waits in place beside its runs, and
// returns its release; ok is false when none is free.
func (lt *lifetime) waiting() (done func(), ok bool) {
	select {
	case lt.waits <- struct{}{}:
		return func() { <-lt.waits }, true
	default:
		return nil, false
	}
}
