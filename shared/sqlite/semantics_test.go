package sqlite_test

import (
	"context"
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
