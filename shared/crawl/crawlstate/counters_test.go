package crawlstate

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// crawlName returns a crawl name of its own for a test, so that tests may share a table.
func crawlName(t *testing.T) string {
	t.Helper()
	return "t" + rand.Text()[:12]
}

// testCountersSumShards: each Flush of a store writes one shard, the one the store picked for
// the crawl; Counters sums the shards and the crawl item (counts written before the counters were
// sharded). The oracle is the number of URLs the test admitted.
func testCountersSumShards(t *testing.T, tb table.Table) {
	ctx := context.Background()
	crawl := crawlName(t)
	wc := &writeCount{Table: tb}
	// Counts an older version left on the crawl item itself.
	if _, err := tb.Update(ctx, CrawlKey(crawl), table.Update{Add: map[string]int64{"seen": 5, "fetched": 2}}, table.Cond{}); err != nil {
		t.Fatal(err)
	}
	stores := []*Store{New(wc, WithBufferedCounters()), New(wc, WithBufferedCounters())} // two containers
	flushes := 2*CounterShards + 3
	for i := range flushes {
		s := stores[i%2]
		if _, err := s.Admit(ctx, crawl, fmt.Sprint("k", i), fmt.Sprint("http://a.test/", i), "http://a.test/", 0, "L"); err != nil {
			t.Fatal(err)
		}
		if i == 7 {
			if err := s.CountParseError(ctx, crawl, errclass.Parse); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	c, err := New(tb).Counters(ctx, crawl)
	if err != nil {
		t.Fatal(err)
	}
	if c.Seen != int64(5+flushes) || c.Fetched != 2 || c.ParseErrors != 1 || c.Classes[errclass.Parse] != 1 {
		t.Errorf("counters = %+v, want %d seen, 2 fetched, 1 parse error", c, 5+flushes)
	}
	if n := wc.writes(CrawlKey(crawl)); n != 0 {
		t.Errorf("the crawl item took %d counter writes, want 0", n)
	}
	own := map[table.Key]bool{stores[0].shardKey(crawl): true, stores[1].shardKey(crawl): true}
	written := 0
	for shard := range own {
		written += wc.writes(shard)
	}
	if written != flushes {
		t.Errorf("the stores' own shards took %d of %d writes, want all", written, flushes)
	}
}

// testUnbufferedCountsGoToShards: a store that does not buffer writes each count to a shard too.
func testUnbufferedCountsGoToShards(t *testing.T, tb table.Table) {
	ctx := context.Background()
	crawl := crawlName(t)
	wc := &writeCount{Table: tb}
	s := New(wc)
	for i := range 3 {
		key := fmt.Sprint("k", i)
		if _, err := s.Admit(ctx, crawl, key, "http://a.test/"+key, "http://a.test/", 0, "L"); err != nil {
			t.Fatal(err)
		}
		u, err := s.Claim(ctx, crawl, key, "o", 0)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := s.Finish(ctx, crawl, key, "o", u.State, Skipped, errclass.Errorf(errclass.Robots, "no")); !ok || err != nil {
			t.Fatalf("Finish = %v, %v", ok, err)
		}
	}
	c, err := s.Counters(ctx, crawl)
	if err != nil || c.Seen != 3 || c.Skipped != 3 || c.Pending() != 0 || c.Classes[errclass.Robots] != 3 {
		t.Errorf("counters = %+v, %v; want 3 seen and skipped for robots", c, err)
	}
	if n := wc.writes(CrawlKey(crawl)); n != 0 {
		t.Errorf("the crawl item took %d counter writes, want 0", n)
	}
}

func TestCountersOfAnUnknownCrawlAreZero(t *testing.T) {
	s, _ := newStore(t)
	c, err := s.Counters(context.Background(), "none")
	if err != nil || c.Seen != 0 || c.Classes == nil {
		t.Errorf("Counters = %+v, %v; want zeros with a classes map", c, err)
	}
}

// TestCountersFailWithTheirRead: a failed read of the shards is an error, not zero counters.
func TestCountersFailWithTheirRead(t *testing.T) {
	s, _ := newStore(t)
	boom := errors.New("throttled")
	s.t = failGetMany{Table: s.t, err: boom}
	if _, err := s.Counters(context.Background(), "c"); !errors.Is(err, boom) {
		t.Errorf("Counters err = %v, want it to wrap %v", err, boom)
	}
}

type failGetMany struct {
	table.Table
	err error
}

func (f failGetMany) GetMany(context.Context, []table.Key) (map[table.Key]table.Item, error) {
	return nil, f.err
}

// TestStoresSpreadOverTheShards: a store writes a crawl's counters to one shard, picked at
// random, so that a shard holds the sequence numbers of few stores (countwrite.go); many stores
// spread their writes over the crawl's shards.
func TestStoresSpreadOverTheShards(t *testing.T) {
	ctx := context.Background()
	s0, _ := newStore(t)
	wc := &writeCount{Table: s0.t}
	const stores = 64
	used := map[table.Key]bool{}
	for range stores {
		s := New(wc)
		for range 3 {
			if err := s.CountPoison(ctx, "a"); err != nil {
				t.Fatal(err)
			}
		}
		if n := wc.writes(s.shardKey("a")); n < 3 {
			t.Fatalf("the store's shard %s took %d of its 3 writes", s.shardKey("a"), n)
		}
		used[s.shardKey("a")] = true
	}
	// 64 picks of 128 shards land on about 50; fewer than 32 has a chance under 1e-9.
	if len(used) < 32 {
		t.Errorf("%d stores wrote to %d shards, want them spread over at least 32", stores, len(used))
	}
	c, err := s0.Counters(ctx, "a")
	if err != nil || c.Classes[errclass.Poison] != 3*stores {
		t.Errorf("poison counted %d (%v), want %d", c.Classes[errclass.Poison], err, 3*stores)
	}
}
