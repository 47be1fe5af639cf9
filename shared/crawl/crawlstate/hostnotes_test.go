package crawlstate

import (
	"context"
	"errors"
	"fmt"
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
	if n, _ := New(tb).CountersWithHosts(ctx, crawl); len(n.Throttled) != 3 {
		t.Fatalf("the dry run removed notes: %+v", n.Throttled)
	}
	if n, err := EraseHostNotes(ctx, tb, crawl, isGone, false); err != nil || n != dry {
		t.Fatalf("erased %d notes, %v; want %d", n, err, dry)
	}
	if n, err := EraseHostNotes(ctx, tb, crawl, isGone, false); err != nil || n != 0 {
		t.Errorf("a second erasure found %d notes, %v; want none", n, err)
	}

	n, err := New(tb).CountersWithHosts(ctx, crawl)
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
	o, err := New(tb).CountersWithHosts(ctx, other)
	if err != nil || len(o.Throttled) != 3 || len(o.Circuits) != 3 {
		t.Errorf("the other crawl's notes: throttled %+v, circuits %+v, %v; want all 3 hosts", o.Throttled, o.Circuits, err)
	}
}

// testHostNotesKeepTheShardsSmall: a crawl that throttles many hosts and opens their circuits
// notes each in an item of its own, under a kilobyte, and its counter shards, which every counter
// write pays for by size, stay as small as with none: in the shards, 200 hosts' notes took 42 KB
// of the shard the store writes, and each counter write on it 42 write units. A note's write replayed after it was
// applied (its answer lost) counts its raise once. Counters reads them all.
func testHostNotesKeepTheShardsSmall(t *testing.T, tb table.Table) {
	ctx := context.Background()
	crawl := crawlName(t)
	at := time.Now().Truncate(time.Millisecond)
	s, f, _ := faultStore(tb)
	const hosts = 200
	for i := range hosts {
		host := fmt.Sprintf("host-%03d.test:8080", i)
		if i == 7 {
			replayNext(t, f, "update", hostNoteKey(crawl, host))
		}
		if err := s.noteThrottled(ctx, crawl, host, 2*time.Second, at, WhySlow); err != nil {
			t.Fatal(err)
		}
		if err := s.noteCircuit(ctx, crawl, host, attrCircuitOpened, at); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.writeCounters(ctx, crawl, map[string]int64{string(Fetched): 3}, nil); err != nil {
		t.Fatal(err)
	}
	for n := range CounterShards {
		it, err := tb.Get(ctx, ShardKey(crawl, n))
		if errors.Is(err, table.ErrNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if size := dynamoSize(ShardKey(crawl, n), it); size > 256 {
			t.Errorf("counter shard %d takes %d bytes after %d hosts' notes, want no note in it", n, size, hosts)
		}
	}
	host := "host-007.test:8080"
	it, err := tb.Get(ctx, hostNoteKey(crawl, host))
	if err != nil {
		t.Fatal(err)
	}
	if size := dynamoSize(hostNoteKey(crawl, host), it); size > 1024 {
		t.Errorf("a host's notes take %d bytes, want a write unit's kilobyte at most", size)
	}
	c, err := New(tb).CountersWithHosts(ctx, crawl)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Throttled) != hosts || len(c.Circuits) != hosts || c.Fetched != 3 {
		t.Fatalf("counters: %d throttled, %d circuits, %d fetched; want %d, %d and 3", len(c.Throttled), len(c.Circuits), c.Fetched, hosts, hosts)
	}
	for _, h := range c.Throttled {
		if h.Raises != 1 || h.Gap != 2*time.Second || !h.RaisedAt.Equal(at) || h.Why != WhySlow {
			t.Errorf("%s: %d raises to %v at %v (%s), want 1 to 2s at %v (slow): a replayed note counts once", h.Host, h.Raises, h.Gap, h.RaisedAt, h.Why, at)
		}
	}
}
