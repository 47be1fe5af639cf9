package crawlstate

import (
	"context"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/port/table"
	"github.com/crawlstack/crawlstack/shared/port/table/tabletest"
)

// testLaneHasOneHolder: of two invocations, the first to ask holds the lane and the other is
// refused until the holder's lease ends; the holder renews it; a lease that ends, or a holder that
// lets go, lets the other hold it; a holder's write that the SDK replays (applied, its answer
// lost) holds, and its let-go replayed lets go once, leaving a lane another holds by then alone.
func testLaneHasOneHolder(t *testing.T, tb table.Table) {
	ctx := context.Background()
	lane := crawlName(t) + "-fetchslow"
	f := tabletest.NewFaults(tb, tabletest.Rule{Op: "update", Key: laneKey(lane)}) // every write replayed
	c := &clock{t: time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)}
	s := New(f, WithClock(c.now))
	want := func(what string, got Lane, err error, held bool, until time.Time) {
		t.Helper()
		if err != nil || got.Held != held || !got.Until.Equal(until) {
			t.Fatalf("%s: %+v, %v; want held %v until %v", what, got, err, held, until.Format(time.TimeOnly))
		}
	}
	a, b := "a", "b"
	got, err := s.HoldLane(ctx, lane, a, c.t.Add(time.Minute))
	want("a free lane", got, err, true, c.t.Add(time.Minute))
	got, err = s.HoldLane(ctx, lane, b, c.t.Add(time.Minute))
	want("a held lane", got, err, false, c.t.Add(time.Minute))
	c.t = c.t.Add(50 * time.Second)
	got, err = s.HoldLane(ctx, lane, a, c.t.Add(time.Minute))
	want("the holder renews", got, err, true, c.t.Add(time.Minute))
	c.t = c.t.Add(30 * time.Second)
	got, err = s.HoldLane(ctx, lane, b, c.t.Add(time.Minute))
	want("a renewed lease, not yet over", got, err, false, c.t.Add(30*time.Second))
	c.t = c.t.Add(31 * time.Second)
	got, err = s.HoldLane(ctx, lane, b, c.t.Add(time.Minute))
	want("a lease over", got, err, true, c.t.Add(time.Minute))
	if err := s.ReleaseLane(ctx, lane, a); err != nil {
		t.Fatalf("a let-go of a lane another holds by now: %v", err)
	}
	got, err = s.HoldLane(ctx, lane, a, c.t.Add(time.Minute))
	want("b's lease, whatever a let go of", got, err, false, c.t.Add(time.Minute))
	if err := s.ReleaseLane(ctx, lane, b); err != nil {
		t.Fatal(err)
	}
	got, err = s.HoldLane(ctx, lane, a, c.t.Add(time.Minute))
	want("a lane let go", got, err, true, c.t.Add(time.Minute))
	if n := len(f.Injected()); n < 6 {
		t.Errorf("%d writes replayed, want every write of the lane's item", n)
	}
}
