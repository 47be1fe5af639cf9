package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/queue"
	"github.com/crawlstack/crawlstack/shared/sqlite"
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
