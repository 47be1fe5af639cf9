package crawlstate

import (
	"context"
	"testing"
	"time"
)

// A 429 or 503 doubles the host's gap, once a second at most and up to MaxThrottleGap; the gap
// halves every ThrottleHalfLife by itself; another store learns it from its next booking.
func TestSlowDownDoublesTheGapAndItDecays(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t)
	const host = "busy.test"
	if got := s.Throttled(host); got != 0 {
		t.Fatalf("a host never throttled: %v", got)
	}
	if gap, err := s.SlowDown(ctx, "", host, time.Second); err != nil || gap != 2*time.Second {
		t.Fatalf("first SlowDown at 1 s = %v, %v; want 2s", gap, err)
	}
	// The same burst, seen by another worker a moment later: raised once.
	c.t = c.t.Add(100 * time.Millisecond)
	if gap, err := s.SlowDown(ctx, "", host, time.Second); err != nil || gap > 2*time.Second {
		t.Fatalf("SlowDown in the same second = %v, %v; want it left at about 2s", gap, err)
	}
	for range 10 {
		c.t = c.t.Add(raiseEvery + time.Millisecond)
		if _, err := s.SlowDown(ctx, "", host, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.Throttled(host); got != MaxThrottleGap {
		t.Errorf("after 11 raises the gap is %v, want the floor rate's %v", got, MaxThrottleGap)
	}
	c.t = c.t.Add(ThrottleHalfLife)
	if got := s.Throttled(host); got != MaxThrottleGap/2 {
		t.Errorf("a half-life later the gap is %v, want %v", got, MaxThrottleGap/2)
	}

	// Another store (another worker's container) that never saw the throttle learns it from
	// its next write of the host's slot item, and books the host's slots at the wider gap after.
	other := New(s.t, WithClock(c.now))
	if _, err := other.ReserveSlots(ctx, host, time.Second, 1, 0); err != nil {
		t.Fatal(err)
	}
	got, err := other.ReserveSlots(ctx, host, time.Second, 3, 0)
	if err != nil || got.Interval != MaxThrottleGap/2 || got.N != 3 {
		t.Errorf("the other store's booking = %+v, %v; want 3 slots %v apart", got, err, MaxThrottleGap/2)
	}
	c.t = c.t.Add(10 * ThrottleHalfLife)
	if got := other.Throttled(host); got != 0 {
		t.Errorf("ten half-lives later the gap is %v, want none left", got)
	}
	if got, _ := other.ReserveSlots(ctx, host, time.Second, 1, 0); got.Interval != time.Second {
		t.Errorf("a recovered host's slots are %v apart, want the configured 1s", got.Interval)
	}
}

// A host with no configured rate gets the least throttled gap, doubling from there.
func TestSlowDownOfAHostWithoutARate(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t)
	if gap, _ := s.SlowDown(ctx, "", "h.test", 0); gap != minThrottleGap {
		t.Errorf("first SlowDown without a rate = %v, want %v", gap, minThrottleGap)
	}
	c.t = c.t.Add(raiseEvery + time.Millisecond)
	if gap, _ := s.SlowDown(ctx, "", "h.test", 0); gap < 2*minThrottleGap-50*time.Millisecond || gap > 2*minThrottleGap {
		t.Errorf("second SlowDown = %v, want about %v", gap, 2*minThrottleGap)
	}
	if d, err := s.ReserveSlot(ctx, "h.test", 0); err != nil || d != 0 {
		t.Errorf("the first slot of a throttled host = %v, %v; want now", d, err)
	}
	if d, _ := s.ReserveSlot(ctx, "h.test", 0); d < minThrottleGap {
		t.Errorf("the next slot of a throttled host without a rate is %v away, want the throttled gap", d)
	}
}
