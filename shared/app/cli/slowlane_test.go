package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// TestTheSlowLaneSharesFetchsDeadLetterQueue: on the embedded backend, as in the stack, a message
// that the slow lane's queue delivers maxReceiveCount times lands in fetch's dead-letter queue;
// crawl redrive fetch moves it back to fetch (which works a run as the lane does), and a redrive
// of fetchslow is refused with where its messages are.
func TestTheSlowLaneSharesFetchsDeadLetterQueue(t *testing.T) {
	ctx := context.Background()
	be, err := OpenEmbedded(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	res, err := be.Setup(ctx, QueueSettings{Visibility: time.Second, MaxReceiveCount: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.FetchSlow == "" {
		t.Fatal("the embedded backend has no slow lane's queue")
	}
	if err := be.Queue.SendBatch(ctx, res.FetchSlow, []queue.Entry{{ID: "run", Body: "a run"}}); err != nil {
		t.Fatal(err)
	}
	// Received and never deleted: the third receive finds it past maxReceiveCount.
	deadline := time.Now().Add(20 * time.Second)
	for {
		if v, nv, err := be.Queue.Depth(ctx, res.FetchDLQ); err != nil {
			t.Fatal(err)
		} else if v+nv == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the slow lane's message never reached fetch's dead-letter queue")
		}
		if _, err := be.Queue.Receive(ctx, res.FetchSlow, 1, 10*time.Millisecond, 100*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := redrivePair(ctx, be, "fetchslow"); err == nil || !strings.Contains(err.Error(), "crawl redrive fetch") {
		t.Errorf("redrive fetchslow: %v, want an error that says crawl redrive fetch", err)
	}
	dlq, src, err := redrivePair(ctx, be, "fetch")
	if err != nil || dlq != res.FetchDLQ || src != res.Fetch {
		t.Fatalf("redrive fetch: %q -> %q (%v), want fetch's DLQ back to fetch", dlq, src, err)
	}
	if n, err := be.Queue.Redrive(ctx, dlq, src); err != nil || n != 1 {
		t.Fatalf("redrive = %d, %v; want the one message", n, err)
	}
	if v, _, err := be.Queue.Depth(ctx, res.Fetch); err != nil || v != 1 {
		t.Errorf("fetch holds %d messages (%v) after the redrive, want the lane's one", v, err)
	}
}
