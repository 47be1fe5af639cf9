package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/local/sqlite"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// TestChangeVisibilityNeedsInFlight checks SQS's MessageNotInflight: a handle whose message was
// already released cannot change its visibility again.
func TestChangeVisibilityNeedsInFlight(t *testing.T) {
	ctx := context.Background()
	q := openDB(t).Queue()
	name := mustQueue(t, q, "inflight", queue.Config{Visibility: time.Minute})
	if err := q.SendBatch(ctx, name, []queue.Entry{{ID: "a", Body: "x"}}); err != nil {
		t.Fatal(err)
	}
	m := receive1(t, q, name)
	if err := q.ChangeVisibility(ctx, name, m.ReceiptHandle, time.Minute); err != nil {
		t.Fatalf("ChangeVisibility of an in-flight message: %v", err)
	}
	if err := q.ChangeVisibility(ctx, name, m.ReceiptHandle, 0); err != nil {
		t.Fatalf("ChangeVisibility(0) of an in-flight message: %v", err)
	}
	if err := q.ChangeVisibility(ctx, name, m.ReceiptHandle, time.Minute); err == nil {
		t.Errorf("ChangeVisibility of a released message succeeded, want an error")
	}
	again := receive1(t, q, name)
	if again.ReceiveCount != 2 {
		t.Errorf("ReceiveCount = %d, want 2 (ChangeVisibility must not count)", again.ReceiveCount)
	}
}

func TestReceiveMaxOutOfRange(t *testing.T) {
	ctx := context.Background()
	q := openDB(t).Queue()
	name := mustQueue(t, q, "max", queue.Config{Visibility: time.Minute})
	for _, n := range []int{0, -1, queue.MaxBatch + 1} {
		if _, err := q.Receive(ctx, name, n, 0, 0); err == nil {
			t.Errorf("Receive(max %d) succeeded, want an error as SQS gives", n)
		}
	}
}

func TestCloseTwice(t *testing.T) {
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("first Close: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// Pending counts the messages of several queues in one look, whether visible, in flight or
// delayed, and refuses a name that is not a queue.
func TestPendingCountsEveryStateOfSeveralQueues(t *testing.T) {
	ctx := context.Background()
	q := openDB(t).Queue()
	a := mustQueue(t, q, "a", queue.Config{Visibility: time.Minute})
	b := mustQueue(t, q, "b", queue.Config{Visibility: time.Minute})
	c := mustQueue(t, q, "c", queue.Config{Visibility: time.Minute})
	if err := q.SendBatch(ctx, a, []queue.Entry{{ID: "1", Body: "x"}, {ID: "2", Body: "y"}}); err != nil {
		t.Fatal(err)
	}
	receive1(t, q, a) // one of a's two in flight
	if err := q.SendBatch(ctx, b, []queue.Entry{{ID: "1", Body: "z", Delay: time.Minute}}); err != nil {
		t.Fatal(err)
	}
	if err := q.SendBatch(ctx, c, []queue.Entry{{ID: "1", Body: "w"}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		names []string
		want  int
	}{{[]string{a, b}, 3}, {[]string{a}, 2}, {[]string{b}, 1}, {[]string{a, b, c}, 4}, {[]string{a, a}, 2}, {nil, 0}} {
		if n, err := q.Pending(ctx, tc.names...); err != nil || n != tc.want {
			t.Errorf("Pending(%q) = %d, %v; want %d", tc.names, n, err, tc.want)
		}
	}
	if _, err := q.Pending(ctx, a, "nope"); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("Pending of an unknown queue: err = %v, want queue.ErrNotFound", err)
	}
}

// TestReclaimInFlightFreesReceivesNotDelays checks what a run that holds the state alone takes
// back: a message received (in flight for an hour) is receivable at once, with its receive
// counted; a delayed message stays hidden until due, and NextDue says when that is.
func TestReclaimInFlightFreesReceivesNotDelays(t *testing.T) {
	ctx := context.Background()
	q := openDB(t).Queue()
	name := mustQueue(t, q, "reclaim", queue.Config{Visibility: time.Hour})
	if err := q.SendBatch(ctx, name, []queue.Entry{{ID: "a", Body: "held"}}); err != nil {
		t.Fatal(err)
	}
	receive1(t, q, name)
	sent := time.Now()
	if err := q.SendBatch(ctx, name, []queue.Entry{{ID: "b", Body: "delayed", Delay: 10 * time.Minute}}); err != nil {
		t.Fatal(err)
	}
	if v, _, err := q.Depth(ctx, name); err != nil || v != 0 {
		t.Fatalf("before the reclaim: %d visible (%v), want 0", v, err)
	}
	n, err := q.ReclaimInFlight(ctx)
	if err != nil || n != 1 {
		t.Fatalf("ReclaimInFlight = %d, %v; want 1 message", n, err)
	}
	m := receive1(t, q, name)
	if m.Body != "held" || m.ReceiveCount != 2 {
		t.Errorf("received %q with ReceiveCount %d, want the held message's second receive", m.Body, m.ReceiveCount)
	}
	msgs, err := q.Receive(ctx, name, 10, 0, 0)
	if err != nil || len(msgs) != 0 {
		t.Errorf("after the reclaim, received %d more messages (%v), want the delayed one still hidden", len(msgs), err)
	}
	if err := q.Delete(ctx, name, m.ReceiptHandle); err != nil {
		t.Fatal(err)
	}
	next, err := q.NextDue(ctx, name)
	if err != nil || next.Before(sent.Add(10*time.Minute-time.Second)) || next.After(time.Now().Add(10*time.Minute)) {
		t.Errorf("NextDue = %v, %v; want about 10 minutes after the delayed message was sent (%v)", next, err, sent)
	}
}
