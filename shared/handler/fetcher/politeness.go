package fetcher

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/crawlstack/crawlstack/shared/observe/metrics"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// Politeness: the host's shared request slots (DESIGN invariant 4) and this process's per-host
// bound on fetches in flight.

// MaxInlineWait is the longest politeness wait spent inside the invocation; longer waits re-queue
// the message with a delay (SQS delays are whole seconds, so shorter ones are cheaper in place).
const MaxInlineWait = time.Second

// MaxHeldWait is the longest wait in place for a slot a message holds (message.Target.Slot),
// besides the SlotLead: schedule sends the URLs of a group whose slots come due within a second
// of each other in one message, after the earliest's delay, which SQS rounds down to the second
// (frontier.packSpread), so the last may come up to two seconds early.
const MaxHeldWait = 2 * time.Second

// SlotHorizon is how far ahead a fetcher books a host's politeness slot: SQS's longest delay.
// A host booked further than that has its message wait in the queue without a slot and ask again,
// so that no URL holds a slot far in the future (a crawl stopped meanwhile would leave the host
// idle for as long).
const SlotHorizon = queue.MaxDelay

// reserveSlot takes the host's politeness slot, waiting in place once for a slot due within
// MaxInlineWait. It returns how long the caller must still wait (0: fetch now) and whether the
// slot it waits for is its own; when it is not (the host is booked SlotHorizon ahead), the wait
// is when the booking ends.
func (h *Handler) reserveSlot(ctx context.Context, host string, interval time.Duration) (time.Duration, bool, error) {
	got, err := h.politeness.ReserveSlots(ctx, host, interval, 1, SlotHorizon)
	if err != nil {
		return 0, false, err
	}
	now := h.now()
	if got.N == 0 {
		// Come back when today's booking is over: the URLs booked ahead go first, and a message
		// that asked again sooner would only find the booking moved on as far.
		return got.Free.Sub(now), false, nil
	}
	wait := got.Start.Sub(now)
	if wait <= 0 {
		return 0, true, nil
	}
	if wait > MaxInlineWait {
		return wait, true, nil
	}
	t := time.NewTimer(wait) // the slot is ours: wait for it in place
	defer t.Stop()
	select {
	case <-ctx.Done():
		return 0, true, ctx.Err()
	case <-t.C:
	}
	return 0, true, nil
}

// heldSlot reports whether the message holds the host's politeness slot: it was re-queued to
// wait for a slot reserved for it, and arrived before that slot or early in it. A message that
// comes too late lost its slot to the next one's holder and reserves again.
// A slot reserved at a shorter interval than the host now needs (robots.txt asks for a longer
// Crawl-delay than the schedule knew of) is not held either.
func (h *Handler) heldSlot(m *message.Fetch, interval time.Duration) bool {
	if m.Gap > 0 && time.Duration(m.Gap)*time.Millisecond < interval {
		return false
	}
	return !m.Slot.IsZero() && h.now().Sub(m.Slot) < interval/2
}

// awaitSlot waits in place until the held slot starts.
func (h *Handler) awaitSlot(ctx context.Context, slot time.Time) error {
	wait := slot.Sub(h.now())
	if wait <= 0 {
		return nil
	}
	metrics.PolitenessWait(ctx, wait)
	return waitFor(ctx, wait)
}

// waitFor waits d in place, or until ctx ends.
func waitFor(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// errSlotBusy stops quick retries when the host's next politeness slot is taken, or the run
// stops. It has no class of its own: the record fails with the last fetch error.
var errSlotBusy = errclass.Errorf(errclass.Scope, "the host's politeness slot is taken")

// interval is the gap between two requests to one host, at the crawl's rate.
func (h *Handler) interval(rps float64, crawlDelay time.Duration) time.Duration {
	return max(crawlstate.IntervalOf(rps), crawlDelay)
}

// hostLimiter bounds the fetches in flight per host in this process. A host's bound is the
// crawl's, or its host rule's (crawlspec.HostRule.Concurrency): one semaphore per host and bound.
type hostLimiter struct {
	mu  sync.Mutex
	sem map[hostBound]chan struct{}
}

type hostBound struct {
	host string
	max  int
}

// acquire takes one of host's max places (max <= 0: no bound), and returns its release.
func (l *hostLimiter) acquire(ctx context.Context, host string, max int) (func(), error) {
	if max <= 0 {
		return func() {}, nil
	}
	k := hostBound{host, max}
	l.mu.Lock()
	if l.sem == nil {
		l.sem = map[hostBound]chan struct{}{}
	}
	s, ok := l.sem[k]
	if !ok {
		s = make(chan struct{}, max)
		l.sem[k] = s
	}
	l.mu.Unlock()
	select {
	case s <- struct{}{}:
		return func() { <-s }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// takeSlot reserves the host's next politeness slot and waits for it in place when it is near, or
// when the batch's runs keep the invocation until then (lifetime.go). It returns the slot's
// start, or the zero time when the record is done: re-queued to wait for a slot further ahead, or
// failed.
func (h *Handler) takeSlot(ctx context.Context, a *fetching) (time.Time, error) {
	f := a.f
	wait, held, err := h.reserveSlot(a.fctx, a.u.Host, a.interval)
	slot := h.now().Add(wait)
	if err != nil {
		return time.Time{}, h.fail(ctx, f, err)
	}
	if wait > 0 && held {
		if waited, failed, err := h.waitWithRuns(ctx, a, slot); waited {
			if failed {
				return time.Time{}, err // the record is done: failed, whatever fail returned
			}
			return slot, nil
		}
		h.log.Debug("sent back to wait for its slot", "url", f.msg.URL, "wait", wait.String())
		return time.Time{}, h.requeueForSlot(ctx, f, wait, a.interval)
	}
	if wait > 0 {
		h.log.Debug("the host is booked past the slot horizon: sent back", "url", f.msg.URL, "wait", wait.String())
		return time.Time{}, h.requeue(ctx, f, wait)
	}
	return h.now(), nil
}

// waitWithRuns waits in place for the slot at `at` of a URL that is no run's, further ahead than
// MaxInlineWait, when the batch's runs keep the invocation until then anyway and the invocation
// has time to fetch and store it then (lifetime.go); waited reports whether it did, and failed that
// the wait failed (err is then what h.fail returned: the record is done either way).
// It gives its room in the memory budget back while it waits, and takes one of the batch's
// places for such waits (lifetime.waiting): a wait of a minute holding the room of a GET, or a
// worker of the batch, starved the batch's other URLs, which then found too little of the
// invocation's time left and went back to the queue by the dozen.
func (h *Handler) waitWithRuns(ctx context.Context, a *fetching, at time.Time) (waited, failed bool, err error) {
	f := a.f
	if f.w == nil || f.w.lane != nil {
		return false, false, nil
	}
	if left, ok := h.runHorizon(a.fctx); !ok || at.After(h.now().Add(left)) {
		return false, false, nil
	}
	// From here it waits, for the runs to book or for its slot: its room goes to the batch's GETs
	// meanwhile. Sent back instead, it needs none either.
	a.hold.release()
	a.hold = nil
	lt := lifetimeOf(ctx)
	if !lt.stays(a.fctx, at) {
		return false, false, nil
	}
	done, ok := lt.waiting()
	if !ok {
		return false, false, nil
	}
	defer done()
	if err := h.awaitSlot(a.fctx, at); err != nil {
		return true, true, h.fail(ctx, f, err)
	}
	if a.hold, err = h.mem.take(a.fctx, flushOf(ctx)); err != nil {
		return true, true, h.fail(ctx, f, err)
	}
	return true, false, nil
}

// slowDown throttles the host after a 429, the answer that asks a client to slow down
// (crawlstate.SlowDown), and returns the gap its next requests take. A 503 or another 5xx, and a
// timeout, are one URL's trouble as often as the host's: the retry policy spaces that URL's tries,
// and the host's rate is left alone. A failed write is only logged: the crawl goes on at the gap
// it had, or at the raised one when only the crawl's note of the raise failed.
func (h *Handler) slowDown(ctx context.Context, crawl, host string, status int, interval time.Duration) time.Duration {
	if status != http.StatusTooManyRequests {
		return interval
	}
	gap, err := h.politeness.SlowDown(ctx, crawl, host, interval)
	if err != nil {
		h.log.Warn("throttle a host", "host", host, "err", err.Error())
		return max(interval, gap)
	}
	h.log.Debug("host throttled", "host", host, "status", status, "gap", gap.String())
	return max(interval, gap)
}
