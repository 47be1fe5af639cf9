package fetcher

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/web/httpfetch"
)

// Many GETs of large pages at once on a budget that fits one never wait for ever: each takes its
// small hold, then the most a page may hold, and keeps its page until a waiting GET stores the
// kept pages; every GET ends before the deadline, and the budget is whole again after.
func TestGETsOnAFullBudgetAllEnd(t *testing.T) {
	const decoded, gets = 1 << 20, 64
	m := newMemory(1, decoded) // raised to one large page and one small hold
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	var kept []*hold
	flush := func() {
		mu.Lock()
		out := kept
		kept = nil
		mu.Unlock()
		for _, h := range out {
			h.release()
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, gets)
	for i := range gets {
		wg.Go(func() {
			h, err := m.take(ctx, flush)
			if err != nil {
				errs <- err
				return
			}
			size := int64(-1) // a body of unknown size takes the most
			if i%2 == 0 {
				size = decoded / 2
			}
			if _, err := h.reserve(ctx, smallBody+1, size); err != nil {
				h.release()
				errs <- err
				return
			}
			h.keep(decoded / 4)
			mu.Lock()
			kept = append(kept, h)
			mu.Unlock()
			if m.someoneWaits() {
				flush()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a GET waited past the deadline: %v", err)
	}
	flush()
	if !m.total.TryAcquire(m.budget) || !m.smalls.TryAcquire(smallsOf(m.budget)) {
		t.Error("the budget is not whole after every page was stored")
	}
}

// A 128 MB function (the slow lane's) fetches many pages at once: its small holds are not bounded
// by the room of a large page beside them. They were, and a page's 20 MB decoded cap left room
// for three GETs at once.
func TestA128MBFunctionHasManyGETsAtOnce(t *testing.T) {
	m := newMemory(MemoryBudgetFor(128), httpfetch.DefaultMaxDecodedBytes)
	n := 0
	for {
		h, ok := m.takeNow()
		if !ok {
			break
		}
		defer h.release()
		n++
	}
	if n < 40 {
		t.Errorf("%d GETs at once in a 128 MB function, want at least 40", n)
	}
}

// takeNow takes a small hold if one is free at once.
func (m *memory) takeNow() (*hold, bool) {
	if !m.smalls.TryAcquire(smallHold) {
		return nil, false
	}
	if !m.total.TryAcquire(smallHold) {
		m.smalls.Release(smallHold)
		return nil, false
	}
	return &hold{m: m, n: smallHold, small: smallHold, flush: func() {}}, true
}

// GETs that all grow to a large page at once, with every small hold taken, all end: one that must
// wait gives back its small hold first, so none waits on room that a waiting GET holds. Holding it
// while waiting, six GETs of 1 MB each on an 8 MB budget waited for ever for 3 MB more each.
func TestGETsThatAllGrowAtOnceAllEnd(t *testing.T) {
	const decoded = 1 << 20 // a large page holds 4 MB
	m := newMemory(8<<20, decoded)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var holds []*hold
	for {
		h, ok := m.takeNow()
		if !ok {
			break
		}
		holds = append(holds, h)
	}
	if len(holds) < 6 {
		t.Fatalf("%d small holds on an 8 MB budget, want 6", len(holds))
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(holds))
	for _, h := range holds {
		wg.Go(func() {
			defer h.release()
			if _, err := h.reserve(ctx, smallBody+1, -1); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a GET that grew waited past the deadline: %v", err)
	}
	if !m.total.TryAcquire(m.budget) || !m.smalls.TryAcquire(smallsOf(m.budget)) {
		t.Error("the budget is not whole after every GET ended")
	}
}

// A GET that waits for room to grow says how long it waited (waitedToGrow), so that the wait is
// not read as the host's answer taking long: a process under load would otherwise throttle the
// host it fetches from as slow (fetchone.go, getOnce).
func TestAGETThatWaitsToGrowSaysHowLong(t *testing.T) {
	const decoded = 1 << 20 // a large page holds 4 MiB
	m := newMemory(8<<20, decoded)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	big, ok := m.takeNow()
	if !ok {
		t.Fatal("no small hold")
	}
	if _, err := big.reserve(ctx, smallBody+1, -1); err != nil {
		t.Fatal(err)
	}
	waiting, ok := m.takeNow()
	if !ok {
		t.Fatal("no second small hold")
	}
	if got := waiting.waitedToGrow(); got != 0 {
		t.Fatalf("waited %v before growing, want 0", got)
	}
	filler, ok := m.takeNow() // 4 + 1 + 1 of 8 MiB taken: the second cannot grow by 3 now
	if !ok {
		t.Fatal("no third small hold")
	}
	done := make(chan error, 1)
	go func() {
		_, err := waiting.reserve(ctx, smallBody+1, -1)
		done <- err
	}()
	for !m.someoneWaits() && ctx.Err() == nil {
		runtime.Gosched() // until the second GET waits for room
	}
	big.release()
	filler.release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := waiting.waitedToGrow(); got <= 0 {
		t.Errorf("waited %v to grow, want the time it waited", got)
	}
	waiting.release()
}
