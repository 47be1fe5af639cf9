package ledger_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/local/sqlite"
	"github.com/crawlstack/crawlstack/shared/observe/ledger"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// updates counts the table's updates: the writes of the counter shards, as the table sees them.
type updates struct {
	table.Table
	n atomic.Int64
}

func (u *updates) Update(ctx context.Context, key table.Key, up table.Update, cond table.Cond) (table.Item, error) {
	u.n.Add(1)
	return u.Table.Update(ctx, key, up, cond)
}

// TestTheHandlersCountersRideOnTheLedgersWrite: a handler that counts and flushes its store at
// the end of its invocation, as every handler does, under the ledger that books the invocation's
// cost to the same store: one counter write an invocation, not two (the handler's and the
// ledger's), and the counters read back from the table hold both the handler's counts and the
// cost. A batch that names no crawl still has its counts written.
func TestTheHandlersCountersRideOnTheLedgersWrite(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	tbl := &updates{Table: db.Table("t")}
	st := crawlstate.New(tbl, crawlstate.WithBufferedCounters())
	l := &ledger.Ledger{State: st, MemoryMB: 512, Polled: true}
	h := l.Wrap(func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		if err := st.CountPoison(ctx, "a"); err != nil {
			return events.SQSEventResponse{}, err
		}
		return events.SQSEventResponse{}, st.Flush(ctx) // as the handlers do at their end
	})
	batch := events.SQSEvent{Records: []events.SQSMessage{{Body: `{"v":1,"kind":"fetch","crawl":"a","url":"http://a.test/"}`}}}
	for range 3 {
		if _, err := h(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	if n := tbl.n.Load(); n != 3 {
		t.Errorf("%d table updates for 3 invocations, want 3: one counter write each", n)
	}
	c, err := st.Counters(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if c.Classes[errclass.Poison] != 3 || c.Cost.LambdaRequests != 3 {
		t.Errorf("counters: poison %d, Lambda requests %d; want 3 and 3 (the handler's counts and the ledger's)",
			c.Classes[errclass.Poison], c.Cost.LambdaRequests)
	}
	// A batch whose records name no crawl books nothing, and still writes the handler's counts.
	noCrawl := events.SQSEvent{Records: []events.SQSMessage{{Body: "not json"}}}
	if _, err := h(ctx, noCrawl); err != nil {
		t.Fatal(err)
	}
	if c, err = st.Counters(ctx, "a"); err != nil || c.Classes[errclass.Poison] != 4 {
		t.Errorf("after a batch of no crawl: poison %d (%v), want 4: its count written by the ledger's flush", c.Classes[errclass.Poison], err)
	}
}
