package fetcher

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

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
// A GET that must wait for room longer than flushAfter stores the pages its batch holds (flush):
// their records go out in a WARC file of their own, and their room comes back. A page kept while
// such a GET waits is stored at once (one flush at a time: the pages kept during one go in the
// next file), and a batch's pages are stored once they hold half the budget. No wait lasts
// for ever: a GET that must wait to grow gives back its small hold's room first, so that the GETs
// waiting to grow hold no room that another needs, and the room held is only that of GETs reading
// small bodies (they end), of large ones (they end) and of kept pages (stored). A large page then
// waits at most for the GETs in flight to end.
//
// The small holds may take up to three quarters of the budget (smallShare), however large a page
// may be. They were once bounded to leave room for one large page beside them, so that a GET that
// grows never waited on them: in a 128 MB function, whose budget is 64 MB and whose large page
// may hold 61 MB (20 MB decoded), that left three GETs at once, and the slow lane's runs of a
// hundred polite hosts fetched at a dozen pages a second (docs/cost.md, "The slow lane's GETs at
// once"). The price is the body a GET has read (smallBody at most) while it waits to grow and
// holds nothing: at most smallShare/4 of the budget beyond it, when every GET waits to grow.

// smallHold is what a GET takes before it goes out, and smallBody the body it may read within it.
const (
	smallHold = 1 << 20
	smallBody = smallHold / 4
)

// smallShare is the share of the budget the small holds may take together.
const smallShare = 0.75

// memory is the byte budget of one Handler; nil bounds nothing.
type memory struct {
	budget int64
	large  int64 // the most a page may hold
	total  *semaphore.Weighted
	// smalls bounds the small holds to smallShare of the budget, and so the GETs at once.
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
		smalls: semaphore.NewWeighted(smallsOf(budget))}
}

// smallsOf is the room the small holds of a budget may take together: smallShare of it, and at
// least one small hold.
func smallsOf(budget int64) int64 {
	return max(smallHold, int64(float64(budget)*smallShare)/smallHold*smallHold)
}

// hold is the room one page holds; a nil hold holds nothing. Its methods are safe for concurrent
// use, but a hold is one GET's.
type hold struct {
	m        *memory
	mu       sync.Mutex
	n, small int64 // all it holds, and its small hold's share (given back once its page is in)
	flush    func()
	// waited is how long its GET has waited to grow: time its answer did not take.
	waited time.Duration
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

// flushAfter is how long a GET waits for room from the GETs in flight, as they end, before it
// stores its batch's kept pages to make room: a WARC file costs a PUT, a parse message, its records
// and its mark, so a page must not get a file of its own for a wait that a GET's end would have
// ended. A batch of many hosts' pages at once stored nearly every page alone (24 pages in 23 or 24
// files in TestABatchOverItsBudgetIsStoredInParts; in the realistic crawl of make cost about 200
// files where 90 would do). 250 ms still made 13 files of the test's 24 pages under load and the
// race detector; GETs in flight end well within a second.
const flushAfter = time.Second

// acquire takes n of the budget, storing the batch's kept pages first if it must wait longer than
// flushAfter.
func (m *memory) acquire(ctx context.Context, n int64, flush func()) error {
	if m.total.TryAcquire(n) {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, flushAfter)
	err := m.total.Acquire(wctx, n)
	cancel()
	if err == nil || ctx.Err() != nil {
		return err
	}
	m.waiting.Add(1)
	defer m.waiting.Add(-1)
	flush()
	return m.total.Acquire(ctx, n)
}

// someoneWaits reports whether a GET has waited for room past flushAfter: a page kept now is
// stored at once.
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

// grow raises the hold to n bytes. When that must wait, it gives back what it holds first and
// waits for all n: a GET waiting to grow holds no room that the one before it in line needs.
func (h *hold) grow(ctx context.Context, n int64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	more := n - h.n
	if more <= 0 {
		return nil
	}
	if h.m.total.TryAcquire(more) {
		h.n = n
		return nil
	}
	h.m.total.Release(h.n)
	h.n = 0
	start := time.Now()
	err := h.m.acquire(ctx, n, h.flush)
	h.waited += time.Since(start)
	if err != nil {
		return err
	}
	h.n = n
	return nil
}

// waitedToGrow is how long the hold's GET has waited for room to grow so far.
func (h *hold) waitedToGrow() time.Duration {
	if h == nil {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.waited
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
