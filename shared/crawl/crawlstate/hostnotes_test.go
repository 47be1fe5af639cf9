package crawlstate

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// An erasure of a host removes its throttling and circuit notes from the crawl's counter shards,
// and from nowhere else: another host's notes and another crawl's stay, and so do the counters.
func testHostNotesErased(t *testing.T, tb table.Table) {
	ctx := context.Background()
	crawl, other := crawlName(t), crawlName(t)+"-other"
	gone, under, kept := "gone.test:8080", "www.gone.test", "notgone.test"
	at := time.Now().Truncate(time.Millisecond)
	s := New(tb, WithClock(func() time.Time { return at }))
	for _, c := range []string{crawl, other} {
		for _, h := range []string{gone, under, kept} {
			if err := s.noteThrottled(ctx, c, h, 2*time.Second, at, Why429); err != nil {
				t.Fatal(err)
			}
			if err := s.noteCircuit(ctx, c, h, attrCircuitOpened, at); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.writeCounters(ctx, crawl, map[string]int64{string(Fetched): 3}, nil); err != nil {
		t.Fatal(err)
	}
	isGone := func(host string) bool { return host == gone || host == under }

	dry, err := EraseHostNotes(ctx, tb, crawl, isGone, true)
	if err != nil || dry != 2*(4+2) {
		t.Fatalf("dry run: %d notes, %v; want 12: 4 throttling and 2 circuit attributes of each of 2 hosts", dry, err)
	}
	if n, _ := New(tb).Counters(ctx, crawl); len(n.Throttled) != 3 {
		t.Fatalf("the dry run removed notes: %+v", n.Throttled)
	}
	if n, err := EraseHostNotes(ctx, tb, crawl, isGone, false); err != nil || n != dry {
		t.Fatalf("erased %d notes, %v; want %d", n, err, dry)
	}
	if n, err := EraseHostNotes(ctx, tb, crawl, isGone, false); err != nil || n != 0 {
		t.Errorf("a second erasure found %d notes, %v; want none", n, err)
	}

	n, err := New(tb).Counters(ctx, crawl)
	if err != nil {
		t.Fatal(err)
	}
	if len(n.Throttled) != 1 || n.Throttled[0].Host != kept || len(n.Circuits) != 1 || n.Circuits[0].Host != kept {
		t.Errorf("after the erasure: throttled %+v, circuits %+v; want %s's alone", n.Throttled, n.Circuits, kept)
	}
	if n.Fetched != 3 {
		t.Errorf("fetched = %d after the erasure, want 3", n.Fetched)
	}
	// Raw: no attribute of the crawl's shards spells an erased host.
	for i := range CounterShards {
		it, err := tb.Get(ctx, ShardKey(crawl, i))
		if err != nil && !errors.Is(err, table.ErrNotFound) {
			t.Fatal(err)
		}
		for name := range it {
			for _, h := range []string{gone, under} {
				if strings.HasSuffix(name, hostAttr(h)) {
					t.Errorf("shard %d still has %s, a note of %s", i, name, h)
				}
			}
		}
	}
	o, err := New(tb).Counters(ctx, other)
	if err != nil || len(o.Throttled) != 3 || len(o.Circuits) != 3 {
		t.Errorf("the other crawl's notes: throttled %+v, circuits %+v, %v; want all 3 hosts", o.Throttled, o.Circuits, err)
	}
}
