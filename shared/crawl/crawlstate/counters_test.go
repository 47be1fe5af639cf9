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

// testCountersSumShards: each Flush of a store writes one shard, round the shards in turn, so no
// shard takes more than its share plus one per store; Counters sums the shards and the crawl
// item (counts written before the counters were sharded). The oracle is the number of URLs the
// test admitted.
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
	most := 0
	for n := range CounterShards {
		most = max(most, wc.writes(ShardKey(crawl, n)))
	}
	// Each store wrote about flushes/2 times round the shards: at most ceil(that/shards) each.
	if limit := 2 * ((flushes/2 + CounterShards) / CounterShards); most > limit {
		t.Errorf("the hottest shard took %d of %d writes, want at most %d", most, flushes, limit)
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

func (f failGetMany) GetMany(context.Context, []string) (map[string]table.Item, error) {
	return nil, f.err
}

// TestEachCrawlGoesRoundAllItsShards: a store that counts for two crawls in turn still spreads
// each crawl's writes over all of its shards.
func TestEachCrawlGoesRoundAllItsShards(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	wc := &writeCount{Table: s.t}
	s.t = wc
	for range CounterShards {
		for _, crawl := range []string{"a", "b"} {
			if err := s.CountPoison(ctx, crawl); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, crawl := range []string{"a", "b"} {
		for n := range CounterShards {
			if got := wc.writes(ShardKey(crawl, n)); got != 1 {
				t.Errorf("shard %d of crawl %s took %d writes, want 1", n, crawl, got)
			}
		}
	}
}
