package localrun

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/queue"
	"github.com/crawlstack/crawlstack/shared/sqlite"
)

func newQueue(t *testing.T, maxReceive int) (*sqlite.Queue, string, string) {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "q.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	q := db.Queue()
	ctx := context.Background()
	dlq, err := q.CreateQueue(ctx, "work-dlq", queue.Config{Visibility: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	src, err := q.CreateQueue(ctx, "work", queue.Config{Visibility: time.Second, DeadLetter: dlq, MaxReceiveCount: maxReceive})
	if err != nil {
		t.Fatal(err)
	}
	return q, src, dlq
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func send(t *testing.T, q *sqlite.Queue, name string, bodies ...string) {
	t.Helper()
	var e []queue.Entry
	for i, b := range bodies {
		e = append(e, queue.Entry{ID: string(rune('a' + i)), Body: b})
	}
	if err := q.SendBatch(context.Background(), name, e); err != nil {
		t.Fatal(err)
	}
}

func TestRunDeletesSuccessesAndRedeliversFailures(t *testing.T) {
	q, src, dlq := newQueue(t, 3)
	send(t, q, src, "ok", "flaky", "poison", "boom")
	var mu sync.Mutex
	seen := map[string][]int{} // body -> receive counts
	handler := func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		var resp events.SQSEventResponse
		for _, r := range ev.Records {
			if r.EventSource != "aws:sqs" || r.Attributes["ApproximateReceiveCount"] == "" {
				t.Errorf("record is not shaped like Lambda's: %+v", r)
			}
			mu.Lock()
			seen[r.Body] = append(seen[r.Body], len(seen[r.Body])+1)
			n := len(seen[r.Body])
			mu.Unlock()
			if r.Body == "boom" {
				panic("handler bug")
			}
			if r.Body == "poison" || (r.Body == "flaky" && n == 1) {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
			}
		}
		return resp, nil
	}
	r := &Runner{Queues: q, Log: quiet(), Sources: []Source{{Name: "work", Queue: src, Handler: handler, Pollers: 1, BatchSize: 1, Visibility: time.Second}}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.Run(ctx); err != nil {
		t.Fatalf("Run = %v, want nil once the queue is empty", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen["ok"]) != 1 || len(seen["flaky"]) != 2 {
		t.Errorf("deliveries: ok %d, flaky %d; want 1 and 2", len(seen["ok"]), len(seen["flaky"]))
	}
	if len(seen["poison"]) != 3 || len(seen["boom"]) != 3 {
		t.Errorf("poison and panicking records were delivered %d and %d times, want maxReceiveCount (3)", len(seen["poison"]), len(seen["boom"]))
	}
	if v, nv, err := q.Depth(context.Background(), dlq); err != nil || v+nv != 2 {
		t.Errorf("DLQ holds %d messages (%v), want the 2 that always failed", v+nv, err)
	}
	if r.Stats.Panics.Load() == 0 {
		t.Error("the panic was not counted")
	}
}

func TestHeartbeatKeepsALongBatchInvisible(t *testing.T) {
	q, src, _ := newQueue(t, 5)
	send(t, q, src, "slow")
	started := make(chan struct{})
	release := make(chan struct{})
	var calls sync.Map
	handler := func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		n, _ := calls.LoadOrStore(ev.Records[0].Body, new(int))
		*(n.(*int))++
		if *(n.(*int)) == 1 {
			close(started)
			<-release // outlive the 1 s visibility timeout several times
		}
		return events.SQSEventResponse{}, nil
	}
	r := &Runner{Queues: q, Log: quiet(), Sources: []Source{{Name: "work", Queue: src, Handler: handler, Pollers: 2, BatchSize: 1, Visibility: time.Second}}}
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background()) }()
	<-started
	// For three visibility timeouts, the message must stay in flight: never visible again.
	deadline := time.After(3 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
watch:
	for {
		select {
		case <-deadline:
			break watch
		case <-tick.C:
			if v, _, err := q.Depth(context.Background(), src); err != nil || v != 0 {
				t.Errorf("the message became visible while its handler ran (visible %d, %v)", v, err)
				break watch
			}
		}
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	n, _ := calls.Load("slow")
	if got := *(n.(*int)); got != 1 {
		t.Errorf("the handler ran %d times, want 1", got)
	}
}
