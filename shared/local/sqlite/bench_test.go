package sqlite_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/port/queue"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// The benchmarks run with b.RunParallel, as the crawler's workers do; -cpu sets the parallelism.

func BenchmarkQueueSendReceiveDelete(b *testing.B) {
	q := openDB(b).Queue()
	name := mustQueue(b, q, "bench", queue.Config{Visibility: time.Minute})
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := q.SendBatch(ctx, name, []queue.Entry{{ID: "a", Body: `{"url":"https://example.com/"}`}}); err != nil {
				b.Error(err)
				return
			}
			msgs, err := q.Receive(ctx, name, 1, time.Minute, time.Second)
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
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

func BenchmarkTableConditionalPut(b *testing.B) {
	tb := openDB(b).Table("bench")
	ctx := context.Background()
	var n atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			key := fmt.Sprintf("url#%d", n.Add(1))
			err := tb.Put(ctx, tk(key), table.Item{"status": "queued", "depth": int64(2), "url": "https://example.com/"}, table.ItemNotExists())
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "puts/s")
}

func BenchmarkTableUpdate(b *testing.B) {
	tb := openDB(b).Table("bench")
	ctx := context.Background()
	var n atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			key := fmt.Sprintf("host#%d", n.Add(1)%64)
			_, err := tb.Update(ctx, tk(key), table.Update{Set: map[string]any{"owner": "w"}, Add: map[string]int64{"count": 1}},
				table.Or(table.NotExists("leaseUntil"), table.Lt("leaseUntil", int64(1))))
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "updates/s")
}

func BenchmarkTableGet(b *testing.B) {
	tb := openDB(b).Table("bench")
	ctx := context.Background()
	const keys = 1000
	for i := range keys {
		err := tb.Put(ctx, tk(fmt.Sprintf("url#%d", i)), table.Item{"state": "fetched", "depth": int64(2), "enqueued": true,
			"url": "https://example.com/p/" + fmt.Sprint(i), "root": "https://example.com/", "updatedAt": time.Now().UnixMilli()}, table.Cond{})
		if err != nil {
			b.Fatal(err)
		}
	}
	var n atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := tb.Get(ctx, tk(fmt.Sprintf("url#%d", n.Add(1)%keys))); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "gets/s")
}
