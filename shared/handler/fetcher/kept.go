package fetcher

import (
	"context"
	"sync"
	"sync/atomic"
)

// A batch's fetched pages wait in kept for their WARC file. They are stored together at the
// batch's end, or earlier, in a file of their own, once they hold half the memory budget or a GET
// waits for room (memory.go): a batch of large pages then needs a PUT per part, and no more room
// than its budget.

// kept holds one invocation's fetched pages until they are stored.
type kept struct {
	h     *Handler
	ctx   context.Context // the batch's
	mu    sync.Mutex
	pages []fetched
	bytes int64
	// failed is the work (by work.n) that must be tried again, from the stores so far.
	failed map[int]bool
	// flushing is set while a flush stores pages: the room a GET waits for comes when it is done,
	// so a page kept meanwhile waits for the next file rather than make one of its own.
	flushing atomic.Bool
}

type keptKey struct{}

// withKept returns ctx carrying a fresh kept for one invocation.
func withKept(ctx context.Context, h *Handler) (context.Context, *kept) {
	k := &kept{h: h, failed: map[int]bool{}}
	k.ctx = context.WithValue(ctx, keptKey{}, k)
	return k.ctx, k
}

// keptOf returns the kept of the invocation of ctx, or nil.
func keptOf(ctx context.Context) *kept {
	k, _ := ctx.Value(keptKey{}).(*kept)
	return k
}

// add keeps a fetched page, and stores the batch's pages if they hold half the budget or a GET
// waits for room.
func (k *kept) add(f fetched) {
	k.mu.Lock()
	k.pages = append(k.pages, f)
	k.bytes += f.hold.size()
	full := k.h.mem != nil && k.bytes >= k.h.mem.budget/2
	k.mu.Unlock()
	if full || k.h.mem.someoneWaits() {
		k.flush()
	}
}

// flush stores the pages kept so far, in a WARC file of their own, and gives their room back. One
// flush runs at a time: the pages kept while it stores go in one file after it, if a GET still
// waits, not each in a file of its own as it comes (a file costs a PUT, a parse message, its
// records and its mark: a batch of many hosts' pages at once, whose GETs waited for room while a
// store took a second, stored nearly every page alone).
func (k *kept) flush() {
	for k.flushing.CompareAndSwap(false, true) {
		k.store(false)
		k.flushing.Store(false)
		// A page kept during the store found it under way: store it now if a GET still waits
		// (else the batch's end does). Checked after the flag is down, so that a page kept from
		// here on flushes itself.
		if !k.h.mem.someoneWaits() || k.empty() {
			return
		}
	}
}

// empty reports whether no page is kept.
func (k *kept) empty() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.pages) == 0
}

// store stores the pages kept so far; last: nothing more of the batch is fetched.
func (k *kept) store(last bool) {
	k.mu.Lock()
	pages := k.pages
	k.pages, k.bytes = nil, 0
	k.mu.Unlock()
	if len(pages) == 0 && !last {
		return
	}
	failed := k.h.storeAll(k.ctx, pages, last)
	for _, p := range pages {
		p.hold.release()
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, n := range failed {
		k.failed[n] = true
	}
}
