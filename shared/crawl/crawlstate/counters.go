package crawlstate

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"

	"github.com/crawlstack/crawlstack/shared/observe/metrics"

	"github.com/crawlstack/crawlstack/shared/crawl/cost"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// CountParseError counts a page whose parse failed (its URL stays fetched).
func (s *Store) CountParseError(ctx context.Context, crawl string, class errclass.Class) error {
	return s.count(ctx, crawl, map[string]int64{"parse_errors": 1, "class_" + string(class): 1})
}

// CountPoison counts a quarantined message of the crawl.
func (s *Store) CountPoison(ctx context.Context, crawl string) error {
	return s.count(ctx, crawl, map[string]int64{"class_" + string(errclass.Poison): 1})
}

func (s *Store) count(ctx context.Context, crawl string, add map[string]int64) error {
	metrics.CountStates(ctx, add) // crawl.pages, when metrics are on
	if s.bufferCounters {
		s.buffer(crawl, add)
		return nil
	}
	key := s.shardKey(crawl)
	if _, err := s.t.Update(ctx, key, table.Update{Add: add}, table.Cond{}); err != nil {
		return fmt.Errorf("count crawl %s in %s: %w", crawl, key, err)
	}
	return nil
}

// CounterShards is how many items a crawl's counters are spread over: "c#<crawl>#0" to
// "c#<crawl>#127". Every handler invocation that counted something writes its increments in one
// update, and in the wide crawl of make cost about 4 invocations in 10 pages do: all in one item,
// that would be 387 writes per 1,000 pages, a crawl of at most 2,600 pages/s before the item's
// partition takes its 1,000 writes/s. Spread over 128 items it is 3 per 1,000 pages for each.
// Reading them all (Counters) takes two BatchGetItem calls; nothing on the handlers' path does.
const CounterShards = 128

// shardKey returns the shard that the store's next counter write of the crawl goes to. A store
// goes round a crawl's shards from a place picked at random, so that each of its writes lands on
// another shard and stores that start together do not start on the same one: of w writes by one
// store, no shard gets more than w/CounterShards + 1, and of all the stores' writes no shard gets
// more than its even share plus one per store.
func (s *Store) shardKey(crawl string) string {
	next, ok := s.shards.Load(crawl)
	if !ok {
		n := new(atomic.Uint64)
		n.Store(rand.Uint64())
		next, _ = s.shards.LoadOrStore(crawl, n)
	}
	return ShardKey(crawl, int(next.(*atomic.Uint64).Add(1)%CounterShards))
}

// Flush writes the buffered counter increments, one update per crawl (to one of its counter
// shards), unless HoldCounters keeps them for WriteCounters. Increments it could not write stay
// buffered for the next Flush. The counters are for progress and the crawl record; a process that
// dies with increments buffered leaves them low, and Tally stays exact.
func (s *Store) Flush(ctx context.Context) error {
	if s.holdCounters {
		return nil
	}
	return s.WriteCounters(ctx)
}

// WriteCounters writes the buffered counter increments, as Flush does, also when they are held.
func (s *Store) WriteCounters(ctx context.Context) error {
	s.mu.Lock()
	pending := s.pending
	s.pending = nil
	s.mu.Unlock()
	var errs []error
	for crawl, add := range pending {
		key := s.shardKey(crawl)
		if _, err := s.t.Update(ctx, key, table.Update{Add: add}, table.Cond{}); err != nil {
			errs = append(errs, fmt.Errorf("count crawl %s in %s: %w", crawl, key, err))
			s.buffer(crawl, add)
		}
	}
	return errors.Join(errs...)
}

func (s *Store) buffer(crawl string, add map[string]int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending == nil {
		s.pending = map[string]map[string]int64{}
	}
	if s.pending[crawl] == nil {
		s.pending[crawl] = map[string]int64{}
	}
	for k, v := range add {
		s.pending[crawl][k] += v
	}
}

// Counters are a crawl's totals.
type Counters struct {
	Seen, Fetched, Skipped, Failed, ParseErrors int64
	// StoppedURLs are the URLs a stopped crawl ended unfetched (state Stopped).
	StoppedURLs int64
	Classes     map[errclass.Class]int64
	// Cost is the crawl's ledger: the billed units its handlers were metered for (AddCost).
	Cost cost.Units
	// Stopped is why the crawl stopped admitting URLs before its end (StopBudget), if it did.
	Stopped string
	// GaveUp are some of the failed URLs, at most MaxGaveUp (Tally only).
	GaveUp []URL
	// Throttled are the hosts whose gap the crawl widened after their 429s, failures or slow answers
	// (see throttled.go).
	Throttled []ThrottledHost
	// Circuits are the hosts whose circuit the crawl opened after their failures (circuitnotes.go).
	Circuits []CircuitHost
}

// MaxGaveUp bounds the failed URLs that Tally lists.
const MaxGaveUp = 20

// Pending is how many seen URLs have no terminal state yet.
func (c Counters) Pending() int64 {
	return c.Seen - c.Fetched - c.Skipped - c.Failed - c.StoppedURLs
}

// counterAttrs are the counters' attribute names besides the classes'.
var counterAttrs = []string{"seen", string(Fetched), string(Skipped), string(Failed), Stopped.counter(), "parse_errors"}

// Counters reads the crawl's totals (zero for an unknown crawl): the sums over its counter shards
// and the crawl item, which holds the counts written before the counters were sharded.
func (s *Store) Counters(ctx context.Context, crawl string) (Counters, error) {
	keys := make([]string, 0, CounterShards+1)
	keys = append(keys, CrawlKey(crawl))
	for n := range CounterShards {
		keys = append(keys, ShardKey(crawl, n))
	}
	items, err := s.t.GetMany(ctx, keys)
	if err != nil {
		return Counters{}, fmt.Errorf("read the counters of crawl %s: %w", crawl, err)
	}
	sum := map[string]int64{}
	for _, it := range items {
		for _, a := range counterAttrs {
			sum[a] += it.Int(a)
		}
		for _, a := range cost.CounterNames {
			sum[a] += it.Int(a)
		}
		for _, cl := range errclass.All {
			sum["class_"+string(cl)] += it.Int("class_" + string(cl))
		}
	}
	c := Counters{
		Seen: sum["seen"], Fetched: sum[string(Fetched)], Skipped: sum[string(Skipped)],
		Failed: sum[string(Failed)], StoppedURLs: sum[Stopped.counter()], ParseErrors: sum["parse_errors"],
		Classes: map[errclass.Class]int64{},
		Cost:    cost.UnitsFromCounters(func(name string) int64 { return sum[name] }),
	}
	for _, cl := range errclass.All {
		if n := sum["class_"+string(cl)]; n != 0 {
			c.Classes[cl] = n
		}
	}
	for _, it := range items {
		if r := it.String(attrStopped); r != "" {
			c.Stopped = r
		}
	}
	c.Throttled, c.Circuits = throttledIn(items), circuitsIn(items)
	return c, nil
}
