package crawlstate

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/port/table"
	"github.com/crawlstack/crawlstack/shared/port/table/tabletest"
)

// testReplayedCounterWritesCountOnce: every counter write is applied and sent again, as the SDK
// sends a write whose answer was lost; one is applied and its answer lost for good, so its store
// sends it again on its next write; one fails before it is applied. The counters equal a tally of
// the crawl's items, and what was counted apart from them.
func testReplayedCounterWritesCountOnce(t *testing.T, tb table.Table) {
	ctx := context.Background()
	crawl := crawlName(t)
	// The counter shards' sort keys: this test's stores write no other crawl's.
	f := tabletest.NewFaults(tb,
		tabletest.Rule{Op: "update", Sort: counterKind, Nth: 3, Lost: true},
		tabletest.Rule{Op: "update", Sort: counterKind, Nth: 6, Fail: true},
		tabletest.Rule{Op: "update", Sort: counterKind}) // every other one: replayed
	buffered := New(f, WithBufferedCounters())
	direct := New(f)
	for i := range 12 {
		s := direct
		if i%2 == 0 {
			s = buffered
		}
		u := fmt.Sprintf("http://a.test/%d", i)
		err := firstOf(s.Admit(ctx, crawl, fmt.Sprint("k", i), u, u, 0, "L"))
		if err == nil {
			err = s.CountPoison(ctx, crawl)
		}
		if err == nil {
			err = s.Flush(ctx)
		}
		if err != nil && !errors.Is(err, tabletest.ErrInjected) {
			t.Fatal(err)
		}
	}
	for _, s := range []*Store{buffered, direct} { // the last writes send what failed
		if err := s.WriteCounters(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := strings.Join(f.Injected(), "\n"); !strings.Contains(got, "lose") || !strings.Contains(got, "fail") || !strings.Contains(got, "replay") {
		t.Fatalf("faults injected:\n%s\nwant a lost answer, a failure and replays", got)
	}
	wantCounts(t, New(tb), crawl, map[string]int64{"seen": 12})
	if c, err := New(tb).Counters(ctx, crawl); err != nil || c.Classes[errclass.Poison] != 12 {
		t.Errorf("poison counted %d (%v), want 12", c.Classes[errclass.Poison], err)
	}
}

func firstOf[T any](_ T, err error) error { return err }

// TestCounterShardItemSize measures a counter shard's item as DynamoDB sizes it after the writes
// of 1,000 stores (Lambda containers over a crawl), each counting a page's worth of states,
// classes, responses and cost: the sequence numbers of the stores that picked the shard must keep
// it within the 1 KB that one write unit pays for.
func TestCounterShardItemSize(t *testing.T) {
	ctx := context.Background()
	s0, _ := newStore(t)
	const stores = 1000
	for range stores {
		s := New(s0.t)
		add := map[string]int64{"seen": 40, "fetched": 35, "skipped": 3, "failed": 2, "class_robots": 3, "class_http_5xx": 2,
			"cost_sqs": 123, "cost_ddb_read_milli": 45678, "cost_ddb_write_milli": 98765, "cost_lambda": 12,
			"sc200": 35, "sc404": 2, "sc503": 2, "resp_bytes": 1234567, "changed": 20, "unchanged": 15}
		for range 3 { // seq 3: a few writes each
			if err := s.count(ctx, "c", add); err != nil {
				t.Fatal(err)
			}
		}
	}
	largest, writers := 0, 0
	for n := range CounterShards {
		it, err := s0.t.Get(ctx, ShardKey("c", n))
		if errors.Is(err, table.ErrNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if size := dynamoSize(ShardKey("c", n), it); size > largest {
			largest = size
			writers = 0
			for a := range it {
				if strings.HasPrefix(a, "q") {
					writers++
				}
			}
		}
	}
	t.Logf("largest of %d shards after %d stores: %d bytes, with %d stores' seqs", CounterShards, stores, largest, writers)
	if largest > 1024 {
		t.Errorf("a counter shard of %d bytes costs %d write units a write, want 1", largest, (largest+1023)/1024)
	}
}

// dynamoSize is an item's size as DynamoDB bills it: each attribute's name and value, a number
// about a byte for two significant digits plus one; the key's two attributes count too.
func dynamoSize(key table.Key, it table.Item) int {
	size := len(table.KeyAttr) + len(key.Part) + len(table.SortAttr) + len(key.Sort)
	for name, v := range it {
		size += len(name)
		switch v := v.(type) {
		case string:
			size += len(v)
		case bool:
			size++
		default:
			n := it.Int(name)
			digits := len(strings.TrimRight(strconv.FormatInt(max(n, -n), 10), "0"))
			size += (digits+1)/2 + 1
		}
	}
	return size
}
