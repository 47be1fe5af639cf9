package crawlstate

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// Every raise of a host's gap is noted for the crawl that saw the 429, in the counter shards that
// Counters reads: two stores raising one host add up, the latest raise gives the gap, a burst seen
// twice in a second is one raise, and another crawl's hosts stay out.
func testThrottledHostsAreNoted(t *testing.T, tb table.Table) {
	ctx := context.Background()
	crawl, other := crawlName(t), crawlName(t)+"-other"
	busy, also, elsewhere := crawl+".busy.test", "[::1]:8443", crawl+".elsewhere.test"
	// The clock starts now: the items' TTL is a day after the store's now, and DynamoDB Local
	// deletes expired items by itself.
	c := &clock{t: time.Now().Truncate(time.Millisecond)}
	a, b := New(tb, WithClock(c.now)), New(tb, WithClock(c.now)) // two workers' containers
	t0 := c.t
	step := func(s *Store, crawl, host string) {
		t.Helper()
		if _, err := s.SlowDown(ctx, crawl, host, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	step(a, crawl, busy) // 2 s
	c.t = t0.Add(100 * time.Millisecond)
	step(b, crawl, busy) // the same burst: not raised, not noted
	c.t = t0.Add(1500 * time.Millisecond)
	step(b, crawl, busy) // twice the 2 s left after 1.5 s of decay, noted by the other store
	step(a, crawl, also) // 2 s
	step(a, other, elsewhere)
	step(a, "", crawl+".unnoted.test") // no crawl: throttled, not noted

	n, err := New(tb).CountersWithHosts(ctx, crawl)
	if err != nil {
		t.Fatal(err)
	}
	// 2 s halved every ThrottleHalfLife for 1.5 s, then doubled.
	raised := 2 * time.Duration(float64(2*time.Second)*math.Pow(0.5, 1.5/ThrottleHalfLife.Seconds()))
	want := []ThrottledHost{
		{Host: also, Gap: 2 * time.Second, RaisedAt: t0.Add(1500 * time.Millisecond), Raises: 1},
		{Host: busy, Gap: raised, RaisedAt: t0.Add(1500 * time.Millisecond), Raises: 2},
	}
	near := func(a, b time.Duration) bool { return (a - b).Abs() <= 5*time.Millisecond }
	if len(n.Throttled) != len(want) {
		t.Fatalf("throttled hosts = %+v, want %+v", n.Throttled, want)
	}
	for i, h := range n.Throttled {
		if h.Host != want[i].Host || !near(h.Gap, want[i].Gap) || !h.RaisedAt.Equal(want[i].RaisedAt) || h.Raises != want[i].Raises {
			t.Errorf("throttled host %d = %+v, want %+v", i, h, want[i])
		}
	}
	// The gap left decays as the slots take it: a half-life later, half.
	if got := n.Throttled[1].Left(t0.Add(1500*time.Millisecond + ThrottleHalfLife)); !near(got, raised/2) {
		t.Errorf("a half-life after the raise to %v, %v left; want %v", raised, got, raised/2)
	}
	// It is the gap the politeness slots take now, as the store that raised it last knows it.
	if got, slot := n.Throttled[1].Left(c.t), b.Throttled(busy); got != slot || !near(slot, raised) {
		t.Errorf("the noted gap now is %v and the slot's %v, want both %v", got, slot, raised)
	}
	tally, err := New(tb).Tally(ctx, crawl)
	if err != nil {
		t.Fatal(err)
	}
	if len(tally.Throttled) != 2 {
		t.Errorf("Tally's throttled hosts = %+v, want the two of Counters", tally.Throttled)
	}
	o, err := New(tb).CountersWithHosts(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Throttled) != 1 || o.Throttled[0].Host != elsewhere {
		t.Errorf("the other crawl's throttled hosts = %+v, want only %s", o.Throttled, elsewhere)
	}
}
