package crawlstate

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
	"sync"

	"github.com/crawlstack/crawlstack/shared/observe/metrics"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// Counter writes that count once. A counter write ADDs increments to one of the crawl's counter
// shards, and ADD is no idempotent write: when DynamoDB applies one and its answer is lost, the
// SDK sends it again, and it would count twice. So each store is a writer with an id of its own
// (8 random characters), and numbers its counter writes of each crawl: seq 1, 2, 3 ... Each write
// sets the shard's attribute "q<writer>" to its seq, on condition that the attribute is absent
// or lower. A replay of an applied write finds its own seq there and fails its condition; the
// item as it was (ALL_OLD) shows q<writer> >= seq, and the store takes that for the write's
// success.
//
// For the rule to hold, a store's writes of a crawl reach the table in their seq's order: they are
// serialized (counterLog.mu), and a write that failed, applied or not, is kept with its seq and
// sent again, as it was, before any newer one (counterLog.unsent). A store keeps the shard it
// picked for a crawl at random (sticky), so each shard item holds the q attributes of the few
// stores that picked it, not of every store: about 13 bytes a store (9 of name, 4 of number),
// so a crawl of 1,000 stores (Lambda containers, over the crawl) puts about 100 bytes on each
// of its 128 shards (measured in TestCounterShardItemSize). A store's own writes are one per
// invocation (Flush) or one per 100 ms (crawl run), far under a partition's 1,000 writes a second.
//
// Increments whose write failed are not lost while the store lives: the next write of the crawl
// sends them first. A store that goes with writes unsent leaves the counters low, and Tally exact.

// CounterShards is how many items a crawl's counters are spread over: "c#<crawl>#0" to
// "c#<crawl>#127". Every handler invocation that counted something writes its increments in one
// update, and in the wide crawl of make cost about 4 invocations in 10 pages do: all in one item,
// that would be 387 writes per 1,000 pages, a crawl of at most 2,600 pages/s before the item's
// partition takes its 1,000 writes/s. Each store writes the shard it picked at random, so the
// stores' writes spread over 128 items. Reading them all (Counters) takes two BatchGetItem calls;
// nothing on the handlers' path does.
const CounterShards = 128

// counterLog is a store's counter writes of one crawl.
type counterLog struct {
	mu     sync.Mutex
	shard  table.Key // the crawl's shard this store writes (sticky)
	seq    int64     // the seq of the last write numbered
	unsent []delta   // numbered and not known to be applied, oldest first
}

// delta is one counter write: the increments, and the attributes set beside them (the notes of
// throttled hosts and circuits).
type delta struct {
	seq int64
	add map[string]int64
	set map[string]any
}

// newWriter is a store's writer id.
func newWriter() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24 and later)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// seqAttr is the attribute of a counter shard that holds the seq of this store's last write.
func (s *counts) seqAttr() string { return "q" + s.writer }

// counterLog returns the store's log of the crawl's counter writes, picking its shard at random
// the first time.
func (s *counts) counterLog(crawl string) *counterLog {
	if l, ok := s.counterLogs.Load(crawl); ok {
		return l.(*counterLog)
	}
	n, _ := rand.Int(rand.Reader, big.NewInt(CounterShards))
	l, _ := s.counterLogs.LoadOrStore(crawl, &counterLog{shard: ShardKey(crawl, int(n.Int64()))})
	return l.(*counterLog)
}

// shardKey is the shard that the store writes the crawl's counters to.
func (s *counts) shardKey(crawl string) table.Key { return s.counterLog(crawl).shard }

// count adds the increments to the crawl's counters: buffered until Flush, or written now.
func (s *counts) count(ctx context.Context, crawl string, add map[string]int64) error {
	metrics.CountStates(ctx, add) // crawl.pages, when metrics are on
	if s.bufferCounters {
		s.buffer(crawl, add)
		return nil
	}
	return s.writeCounters(ctx, crawl, add, nil)
}

// writeCounters numbers a write of add and set (unless both are empty) and sends it to the
// crawl's shard, after the writes unsent before it. A write that fails stays unsent, with its
// seq, for the next call to send again.
func (s *counts) writeCounters(ctx context.Context, crawl string, add map[string]int64, set map[string]any) error {
	l := s.counterLog(crawl)
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(add) > 0 || len(set) > 0 {
		l.seq++
		l.unsent = append(l.unsent, delta{seq: l.seq, add: add, set: set})
	}
	for len(l.unsent) > 0 {
		if err := s.writeDelta(ctx, l.shard, l.unsent[0]); err != nil {
			return fmt.Errorf("count crawl %s in %s: %w", crawl, l.shard, err)
		}
		l.unsent = l.unsent[1:]
	}
	return nil
}

// writeDelta writes d to the shard unless the shard shows it written (see above).
func (s *counts) writeDelta(ctx context.Context, shard table.Key, d delta) error {
	q := s.seqAttr()
	set := make(map[string]any, len(d.set)+1)
	for k, v := range d.set {
		set[k] = v
	}
	set[q] = d.seq
	_, err := s.t.Update(ctx, shard, table.Update{Set: set, Add: d.add}, table.Or(table.NotExists(q), table.Lt(q, d.seq)))
	if cf, done := table.IsConditionFailed(err); done {
		if cf.Item.Int(q) >= d.seq {
			return nil // applied before: this write's replay, or its earlier attempt's
		}
		return fmt.Errorf("write %d of %s refused at seq %d", d.seq, q, cf.Item.Int(q))
	}
	return err
}

// Flush writes the buffered counter increments, one update per crawl (to the store's shard of
// the crawl), unless HoldCounters keeps them for WriteCounters, or ctx comes from FlushLater: the
// caller flushes them itself once the invocation is over. Increments it could not write are kept
// for the next Flush. The counters are for progress and the crawl record; a process that dies
// with increments unwritten leaves them low, and Tally stays exact.
func (s *counts) Flush(ctx context.Context) error {
	if s.holdCounters || ctx.Value(flushLaterKey{}) == s {
		return nil
	}
	return s.WriteCounters(ctx)
}

// flushLaterKey marks a context in which a store's Flush writes nothing (FlushLater).
type flushLaterKey struct{}

// FlushLater returns ctx in which the store's Flush writes nothing: for a caller that runs a
// handler in it and then flushes the store itself, in the same invocation (ledger.Ledger, which
// adds the invocation's cost to the counters after the handler returns). The handler's counters
// then ride on that one write, instead of a write of their own and a second for the cost: one
// counter write per invocation and crawl, not two.
func (s *counts) FlushLater(ctx context.Context) context.Context {
	return context.WithValue(ctx, flushLaterKey{}, s)
}

// WriteCounters writes the buffered counter increments, as Flush does, also when they are held,
// and sends again the writes that failed before.
func (s *counts) WriteCounters(ctx context.Context) error {
	s.mu.Lock()
	pending := s.pending
	s.pending = nil
	s.mu.Unlock()
	var errs []error
	for crawl, add := range pending {
		if err := s.writeCounters(ctx, crawl, add, nil); err != nil {
			errs = append(errs, err)
		}
	}
	s.counterLogs.Range(func(crawl, v any) bool {
		if _, done := pending[crawl.(string)]; done {
			return true
		}
		l := v.(*counterLog)
		l.mu.Lock()
		left := len(l.unsent)
		l.mu.Unlock()
		if left > 0 {
			if err := s.writeCounters(ctx, crawl.(string), nil, nil); err != nil {
				errs = append(errs, err)
			}
		}
		return true
	})
	return errors.Join(errs...)
}

func (s *counts) buffer(crawl string, add map[string]int64) {
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
