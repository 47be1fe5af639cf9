package fetcher

import (
	"context"
	"sync"
	"time"

	"github.com/crawlstack/crawlstack/shared/errclass"
	"github.com/crawlstack/crawlstack/shared/message"
)

// Politeness: the host's shared request slots (DESIGN invariant 4) and this process's per-host
// bound on fetches in flight.

// MaxInlineWait is the longest politeness wait spent inside the invocation; longer waits re-queue
// the message with a delay (SQS delays are whole seconds, so shorter ones are cheaper in place).
const MaxInlineWait = time.Second

// reserveSlot takes the host's politeness slot, waiting in place once for a slot due within
// MaxInlineWait. It returns how long the caller must still wait (0: fetch now).
func (h *Handler) reserveSlot(ctx context.Context, host string, interval time.Duration) (time.Duration, error) {
	wait, err := h.state.ReserveSlot(ctx, host, interval)
	if err != nil || wait == 0 || wait > MaxInlineWait {
		return wait, err
	}
	t := time.NewTimer(wait) // the slot is ours: wait for it in place
	defer t.Stop()
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-t.C:
	}
	return 0, nil
}

// heldSlot reports whether the message holds the host's politeness slot: it was re-queued to
// wait for a slot reserved for it, and arrived before that slot or early in it. A message that
// comes too late lost its slot to the next one's holder and reserves again.
func (h *Handler) heldSlot(m *message.Fetch, interval time.Duration) bool {
	return !m.Slot.IsZero() && h.Now().Sub(m.Slot) < interval/2
}

// awaitSlot waits in place until the held slot starts.
func (h *Handler) awaitSlot(ctx context.Context, slot time.Time) error {
	wait := slot.Sub(h.Now())
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// errSlotBusy stops quick retries when the host's next politeness slot is taken. It has no class
// of its own: the record fails with the last fetch error.
var errSlotBusy = errclass.Errorf(errclass.Scope, "the host's politeness slot is taken")

// interval is the gap between two requests to one host.
func (h *Handler) interval(crawlDelay time.Duration) time.Duration {
	var d time.Duration
	if h.cfg.HostRPS > 0 {
		d = time.Duration(float64(time.Second) / h.cfg.HostRPS)
	}
	return max(d, crawlDelay)
}

// hostLimiter bounds the fetches in flight per host in this process.
type hostLimiter struct {
	max int
	mu  sync.Mutex
	sem map[string]chan struct{}
}

func (l *hostLimiter) acquire(ctx context.Context, host string) (func(), error) {
	if l.max <= 0 {
		return func() {}, nil
	}
	l.mu.Lock()
	if l.sem == nil {
		l.sem = map[string]chan struct{}{}
	}
	s, ok := l.sem[host]
	if !ok {
		s = make(chan struct{}, l.max)
		l.sem[host] = s
	}
	l.mu.Unlock()
	select {
	case s <- struct{}{}:
		return func() { <-s }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
