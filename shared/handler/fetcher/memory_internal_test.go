package fetcher

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"
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
	if !m.total.TryAcquire(m.budget) || !m.smalls.TryAcquire(m.budget-m.large) {
		t.Error("the budget is not whole after every page was stored")
	}
}

// However many GETs hold their small holds, a large page still fits: the small holds leave room
// for one, so that a GET that grows never waits on the others' small holds.
func TestTheSmallHoldsLeaveRoomForALargePage(t *testing.T) {
	const decoded = 1 << 20
	m := newMemory(8<<20, decoded)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	holds := make(chan *hold, 8)
	for range 8 {
		go func() {
			h, err := m.take(ctx, func() {})
			if err == nil {
				holds <- h
			}
		}()
	}
	first := <-holds
	// Wait until every small hold that can be taken is taken.
	for m.smalls.TryAcquire(smallHold) {
		m.smalls.Release(smallHold)
		if ctx.Err() != nil {
			t.Fatal("the small holds never ran out")
		}
		runtime.Gosched()
	}
	grown, grow := context.WithTimeout(ctx, 2*time.Second)
	defer grow()
	if _, err := first.reserve(grown, smallBody+1, -1); err != nil {
		t.Errorf("a GET could not grow to a large page beside the small holds: %v", err)
	}
	first.release()
	for range 7 {
		(<-holds).release()
	}
}
