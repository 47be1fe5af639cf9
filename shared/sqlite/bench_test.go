package sqlite_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/queue"
	"github.com/crawlstack/crawlstack/shared/table"
)

// BenchmarkQueueSendReceiveDelete measures one message's whole life: send, receive, delete
// (three write transactions).
func BenchmarkQueueSendReceiveDelete(b *testing.B) {
	ctx := context.Background()
	q := openDB(b).Queue()
	name, err := q.CreateQueue(ctx, "bench", queue.Config{Visibility: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	entry := []queue.Entry{{ID: "a", Body: `{"url":"https://example.com/some/page","depth":3}`}}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := q.SendBatch(ctx, name, entry); err != nil {
				b.Error(err)
				return
			}
			msgs, err := q.Receive(ctx, name, 1, 0, time.Second)
			if err != nil || len(msgs) != 1 {
				b.Errorf("Receive = %d messages, %v", len(msgs), err)
				return
			}
			if err := q.Delete(ctx, name, msgs[0].ReceiptHandle); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkTableConditionalPut measures the dedup write: a Put that holds only if no item has
// the key.
func BenchmarkTableConditionalPut(b *testing.B) {
	ctx := context.Background()
	tb := openDB(b).Table("bench")
	item := table.Item{"url": "https://example.com/some/page", "depth": int64(3), "status": "admitted"}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if err := tb.Put(ctx, "url#"+strconv.Itoa(i), item, table.ItemNotExists()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTableUpdate measures a counter ADD plus a SET under a condition on one hot item.
func BenchmarkTableUpdate(b *testing.B) {
	ctx := context.Background()
	tb := openDB(b).Table("bench")
	keys := make([]string, 64)
	for i := range keys {
		keys[i] = fmt.Sprintf("host#%d", i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		u := table.Update{Set: map[string]any{"owner": "w1"}, Add: map[string]int64{"count": 1}}
		cond := table.Or(table.NotExists("leaseUntil"), table.Lt("leaseUntil", int64(i)))
		if _, err := tb.Update(ctx, keys[i%len(keys)], u, cond); err != nil {
			b.Fatal(err)
		}
	}
}
