package crawlstate

import (
	"context"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/port/table"
	"github.com/crawlstack/crawlstack/shared/port/table/tabletest"
)

// testReplayedSlotWrites: the writes of a host's politeness slot item, each applied and sent
// again by the SDK. A booking gets the slots it wrote, not a later run after its own (which would
// leave its first run unused and the host idle); failures in a row count once each, so the
// circuit opens at the third, not before; the opening and the raise of the host's gap are noted
// for the crawl's summary; the probe that a store took is its own.
func testReplayedSlotWrites(t *testing.T, tb table.Table) {
	ctx := context.Background()
	crawl := crawlName(t)
	host := crawl + ".test"
	f := tabletest.NewFaults(tb, tabletest.Rule{Op: "update", Key: slotKey(host)}) // every one
	c := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	s := New(f, WithClock(c.now), WithCircuit(3, 10*time.Second))

	sl, err := s.ReserveSlots(ctx, host, time.Second, 3, 0)
	if err != nil || !sl.Start.Equal(c.t) || sl.N != 3 || !sl.Free.Equal(c.t.Add(3*time.Second)) {
		t.Fatalf("a replayed booking of a free host = %+v, %v; want 3 slots from now", sl, err)
	}
	for i := range 3 {
		open, err := s.HostFailed(ctx, crawl, host, true, time.Second)
		if err != nil || open != (i == 2) {
			t.Fatalf("replayed failure %d in a row: open %v, %v; want open only after the third", i+1, open, err)
		}
	}
	cnt, err := s.CountersWithHosts(ctx, crawl)
	if err != nil || len(cnt.Circuits) != 1 || cnt.Circuits[0].Opens != 1 || len(cnt.Throttled) != 1 {
		t.Errorf("the crawl's notes = circuits %+v, throttled %+v (%v); want the opening and the raise noted once", cnt.Circuits, cnt.Throttled, err)
	}
	c.t = c.t.Add(10 * time.Second)
	if w, probe, err := s.CircuitWait(ctx, host); err != nil || w != 0 || !probe {
		t.Errorf("the replayed take of the due probe: wait %v, probe %v, %v; want the probe", w, probe, err)
	}
	if len(f.Injected()) < 5 {
		t.Errorf("faults injected %v, want each write of the slot item replayed", f.Injected())
	}
}
