package crawlstate

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// raceCounter counts the table updates whose condition failed: each one is a billed write.
type raceCounter struct {
	table.Table
	failed atomic.Int64
}

func (r *raceCounter) Update(ctx context.Context, key table.Key, u table.Update, c table.Cond) (table.Item, error) {
	it, err := r.Table.Update(ctx, key, u, c)
	if _, ok := table.IsConditionFailed(err); ok {
		r.failed.Add(1)
	}
	return it, err
}

func TestReserveSlotsBooksARunUpToTheHorizon(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t)
	t0 := c.t
	got, err := s.ReserveSlots(ctx, "a.test", time.Second, 5, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got.N != 3 || !got.Start.Equal(t0) || !got.At(2).Equal(t0.Add(2*time.Second)) || !got.Free.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("5 slots with a 3s horizon: %+v, want 3 from now, free at +3s", got)
	}
	if got, _ := s.ReserveSlots(ctx, "a.test", time.Second, 2, 3*time.Second); got.N != 0 || !got.Free.Equal(t0.Add(3*time.Second)) {
		t.Errorf("a host booked to the horizon: %+v, want none, free at +3s", got)
	}
	c.t = t0.Add(1500 * time.Millisecond)
	if got, _ := s.ReserveSlots(ctx, "a.test", time.Second, 4, 3*time.Second); got.N != 2 || !got.Start.Equal(t0.Add(3*time.Second)) {
		t.Errorf("1.5s later: %+v, want 2 slots from +3s (the horizon ends at +4.5s)", got)
	}
	if got, _ := s.ReserveSlots(ctx, "a.test", time.Second, 3, 0); got.N != 3 || !got.Start.Equal(t0.Add(5*time.Second)) {
		t.Errorf("no horizon: %+v, want 3 slots from +5s", got)
	}
	if got, _ := s.ReserveSlots(ctx, "b.test", 0, 3, time.Second); got.N != 3 || !got.Start.Equal(c.t) {
		t.Errorf("no interval: %+v, want 3 slots now", got)
	}
}

func TestReserveSlotsGuessesWithoutABilledRace(t *testing.T) {
	ctx := context.Background()
	a, c := newStore(t)
	rc := &raceCounter{Table: a.t}
	a.t = rc
	b := New(rc, WithClock(c.now)) // another worker on the same table, which has not seen the host
	if _, err := a.ReserveSlots(ctx, "a.test", time.Second, 3, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := a.ReserveSlots(ctx, "a.test", time.Second, 1, 0); err != nil {
		t.Fatal(err)
	}
	if n := rc.failed.Load(); n != 0 {
		t.Errorf("one worker, one host: %d failed conditional writes, want 0", n)
	}
	got, err := b.ReserveSlots(ctx, "a.test", time.Second, 1, 0)
	if err != nil || !got.Start.Equal(c.t.Add(4*time.Second)) {
		t.Fatalf("the other worker: %+v, %v, want the slot at +4s", got, err)
	}
	if n := rc.failed.Load(); n != 1 {
		t.Errorf("a worker that had not seen the busy host: %d failed writes, want 1", n)
	}
	// A day later the host is idle: a worker that last saw it busy needs no failed write either.
	c.t = c.t.Add(24 * time.Hour)
	if got, err := a.ReserveSlots(ctx, "a.test", time.Second, 1, 0); err != nil || !got.Start.Equal(c.t) {
		t.Fatalf("a day later: %+v, %v, want a slot now", got, err)
	}
	if n := rc.failed.Load(); n != 1 {
		t.Errorf("an idle host used before: %d failed writes in all, want still 1", n)
	}
}

// TestReserveRunBooksOnlyWhenTheHostIsFreeSoon: a run is booked whole in one write when the host's
// next free slot comes within the wait allowed; a host booked further ahead (by another worker,
// which this store has not seen) gets no write but the failed condition's, and tells when it is
// free: the run waits in the queue for then. The horizon still bounds the slots given.
func TestReserveRunBooksOnlyWhenTheHostIsFreeSoon(t *testing.T) {
	ctx := context.Background()
	a, c := newStore(t)
	t0 := c.t
	writes := &raceCounter{Table: a.t}
	a.t = writes
	other := New(writes, WithClock(c.now))
	if _, err := other.ReserveSlots(ctx, "a.test", time.Second, 10, 0); err != nil {
		t.Fatal(err)
	}
	got, err := a.ReserveRun(ctx, "a.test", time.Second, 5, 4*time.Second, time.Minute)
	if err != nil || got.N != 0 || !got.Free.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("a host booked 10s ahead, 4s allowed: %+v, %v; want no slot, free at +10s", got, err)
	}
	if n := writes.failed.Load(); n != 1 {
		t.Errorf("%d failed conditional writes, want the one that learnt the booking", n)
	}
	c.t = t0.Add(7 * time.Second)
	got, err = a.ReserveRun(ctx, "a.test", time.Second, 5, 4*time.Second, time.Minute)
	if err != nil || got.N != 5 || !got.Start.Equal(t0.Add(10*time.Second)) || !got.Free.Equal(t0.Add(15*time.Second)) {
		t.Fatalf("3s before the host is free: %+v, %v; want 5 slots from +10s", got, err)
	}
	if n := writes.failed.Load(); n != 1 {
		t.Errorf("%d failed conditional writes in all, want still 1", n)
	}
	// The slots are the host's: the other worker's next is after them.
	if next, _ := other.ReserveSlots(ctx, "a.test", time.Second, 1, 0); !next.Start.Equal(t0.Add(15 * time.Second)) {
		t.Errorf("the other worker's next slot at %v, want +15s", next.Start.Sub(t0))
	}
	if got, _ := a.ReserveRun(ctx, "b.test", time.Second, 5, 0, 3*time.Second); got.N != 3 || !got.Start.Equal(c.t) {
		t.Errorf("an idle host with a 3s horizon: %+v, want 3 slots from now", got)
	}
}
