package fetcher

import (
	"context"
	"math"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/semaphore"

	"github.com/crawlstack/crawlstack/shared/crawl/web/httpfetch"
)

// The bodies and WARC records a process holds are bounded by a byte budget (Config.MemoryBudget),
// shared by its batches. A GET takes smallHold before it goes out, and a body that grows past
// smallBody, or whose size says it will, takes what its page may hold at most (httpfetch.Reserve):
// twice its size when the response tells it (the body, and its record), three times the decoded
// cap when it does not (a buffer grown by doubling, and the copy made at its size). A fetched page
// keeps what its record holds until its WARC file is stored, twice over (the file is assembled
// from the records), and its body only for the handoff.
//
// A GET that must wait for room first stores the pages its batch holds (flush): their records go
// out in a WARC file of their own, and their room comes back. A page kept while a GET waits is
// stored at once, and a batch's pages are stored once they hold half the budget. No wait lasts
// for ever: the small holds together leave room for one large page, so that once the kept pages
// are stored a large page always fits, and it needs no more room to end.

// smallHold is what a GET takes before it goes out, and smallBody the body it may read within it.
const (
	smallHold = 1 << 20
	smallBody = smallHold / 4
)

// memory is the byte budget of one Handler; nil bounds nothing.
type memory struct {
	budget int64
	large  int64 // the most a page may hold
	total  *semaphore.Weighted
	// smalls bounds the small holds to budget-large, so that a large page always fits in time.
	smalls  *semaphore.Weighted
	waiting atomic.Int32
}

// newMemory returns the budget of budget bytes for pages of at most decoded bytes (nil when
// budget is 0). A budget too small for one large page is raised to fit it.
func newMemory(budget, decoded int64) *memory {
	if budget <= 0 {
		return nil
	}
	large := 3*decoded + smallHold
	budget = max(budget, large+smallHold)
	return &memory{budget: budget, large: large, total: semaphore.NewWeighted(budget),
		smalls: semaphore.NewWeighted(budget - large)}
}

// hold is the room one page holds; a nil hold holds nothing. Its methods are safe for concurrent
// use, but a hold is one GET's.
type hold struct {
	m        *memory
	mu       sync.Mutex
	n, small int64 // all it holds, and its small hold's share (given back once its page is in)
	flush    func()
}

// take returns a small hold for a GET; flush stores the kept pages of the GET's batch, to make
// room while the GET waits.
func (m *memory) take(ctx context.Context, flush func()) (*hold, error) {
	if m == nil {
		return nil, nil
	}
	// A GET waiting for a small hold waits for others to end, not for stored pages.
	if err := m.smalls.Acquire(ctx, smallHold); err != nil {
		return nil, err
	}
	if err := m.acquire(ctx, smallHold, flush); err != nil {
		m.smalls.Release(smallHold)
		return nil, err
	}
	return &hold{m: m, n: smallHold, small: smallHold, flush: flush}, nil
}

// acquire takes n of the budget, storing the batch's kept pages first if it must wait.
func (m *memory) acquire(ctx context.Context, n int64, flush func()) error {
	if m.total.TryAcquire(n) {
		return nil
	}
	m.waiting.Add(1)
	defer m.waiting.Add(-1)
	flush()
	return m.total.Acquire(ctx, n)
}

// someoneWaits reports whether a GET waits for room: a page kept now is stored at once.
func (m *memory) someoneWaits() bool { return m != nil && m.waiting.Load() > 0 }

// reserve is the hold's httpfetch.Reserve: a body past smallBody takes what its page may hold.
func (h *hold) reserve(ctx context.Context, _, size int64) (int64, error) {
	need := h.m.large
	if size >= 0 {
		need = min(need, 2*size+smallHold)
	}
	if err := h.grow(ctx, need); err != nil {
		return 0, err
	}
	return math.MaxInt64, nil
}

// grow raises the hold to n bytes.
func (h *hold) grow(ctx context.Context, n int64) error {
	h.mu.Lock()
	more := n - h.n
	h.mu.Unlock()
	if more <= 0 {
		return nil
	}
	if err := h.m.acquire(ctx, more, h.flush); err != nil {
		return err
	}
	h.mu.Lock()
	h.n += more
	h.mu.Unlock()
	return nil
}

// with returns ctx whose GETs ask the hold for room (httpfetch.WithReserve).
func (h *hold) with(ctx context.Context) context.Context {
	if h == nil {
		return ctx
	}
	return httpfetch.WithReserve(ctx, smallBody, h.reserve)
}

// keep lowers the hold to n bytes, what a fetched page holds until it is stored, and gives back
// its small hold: the page no longer reads a body.
func (h *hold) keep(n int64) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.small > 0 {
		h.m.smalls.Release(h.small)
		h.small = 0
	}
	if less := h.n - n; less > 0 {
		h.m.total.Release(less)
		h.n = n
	}
}

// size is the bytes the hold holds.
func (h *hold) size() int64 {
	if h == nil {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// release gives the whole hold back; it may be called more than once.
func (h *hold) release() {
	if h == nil {
		return
	}
	h.keep(0)
}
