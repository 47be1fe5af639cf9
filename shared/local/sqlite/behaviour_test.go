package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/local/sqlite"
	"github.com/crawlstack/crawlstack/shared/port/queue"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

func mustQueue(t testing.TB, q *sqlite.Queue, name string, cfg queue.Config) string {
	t.Helper()
	addr, err := q.CreateQueue(context.Background(), name, cfg)
	if err != nil {
		t.Fatalf("CreateQueue: %v", err)
	}
	return addr
}

func receive1(t *testing.T, q *sqlite.Queue, name string) queue.Message {
	t.Helper()
	msgs, err := q.Receive(context.Background(), name, 1, time.Minute, 5*time.Second)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("Receive = %v, %v; want one message", msgs, err)
	}
	return msgs[0]
}

func TestStaleReceiptHandle(t *testing.T) {
	ctx := context.Background()
	q := openDB(t).Queue()
	name := mustQueue(t, q, "stale", queue.Config{Visibility: time.Minute})
	if err := q.SendBatch(ctx, name, []queue.Entry{{ID: "a", Body: "x"}}); err != nil {
		t.Fatal(err)
	}
	first := receive1(t, q, name)
	if err := q.ChangeVisibility(ctx, name, first.ReceiptHandle, 0); err != nil {
		t.Fatal(err)
	}
	second := receive1(t, q, name)

	if err := q.Delete(ctx, name, first.ReceiptHandle); err != nil {
		t.Errorf("Delete with a stale handle: %v, want nil", err)
	}
	if v, nv, err := q.Depth(ctx, name); err != nil || v != 0 || nv != 1 {
		t.Errorf("after a stale Delete, Depth = %d, %d, %v; want 0, 1 (still in flight)", v, nv, err)
	}
	if err := q.ChangeVisibility(ctx, name, first.ReceiptHandle, 0); err == nil {
		t.Errorf("ChangeVisibility with a stale handle succeeded, want an error")
	}
	if err := q.Delete(ctx, name, second.ReceiptHandle); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if v, nv, err := q.Depth(ctx, name); err != nil || v != 0 || nv != 0 {
		t.Errorf("after Delete, Depth = %d, %d, %v; want 0, 0", v, nv, err)
	}
	if err := q.Delete(ctx, name, second.ReceiptHandle); err != nil {
		t.Errorf("second Delete: %v, want nil", err)
	}
	if err := q.Delete(ctx, name, "garbage"); err == nil {
		t.Errorf("Delete with a malformed handle succeeded, want an error")
	}
}

func TestQueueErrors(t *testing.T) {
	ctx := context.Background()
	q := openDB(t).Queue()
	name := mustQueue(t, q, "errs", queue.Config{Visibility: time.Minute})
	tests := []struct {
		name string
		call func() error
		want error
	}{
		{"SendMissingQueue", func() error { return q.SendBatch(ctx, "nope", []queue.Entry{{ID: "a", Body: "x"}}) }, queue.ErrNotFound},
		{"ReceiveMissingQueue", func() error { _, err := q.Receive(ctx, "nope", 1, 0, 0); return err }, queue.ErrNotFound},
		{"DepthMissingQueue", func() error { _, _, err := q.Depth(ctx, "nope"); return err }, queue.ErrNotFound},
		{"RedriveMissingQueue", func() error { _, err := q.Redrive(ctx, "nope", name); return err }, queue.ErrNotFound},
		{"DLQMissing", func() error {
			_, err := q.CreateQueue(ctx, "src", queue.Config{DeadLetter: "nope", MaxReceiveCount: 5})
			return err
		}, queue.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
	for _, bad := range []string{"", "has space", "slash/y", strings.Repeat("x", 81)} {
		t.Run("BadName/"+bad, func(t *testing.T) {
			if _, err := q.CreateQueue(ctx, bad, queue.Config{}); err == nil {
				t.Errorf("CreateQueue(%q) succeeded, want an error", bad)
			}
		})
	}
	batchTests := []struct {
		name    string
		entries []queue.Entry
		failed  []string
		sent    int // the valid entries are sent, except in a batch with a duplicate id
	}{
		{"DuplicateID", []queue.Entry{{ID: "a", Body: "1"}, {ID: "b", Body: "2"}, {ID: "a", Body: "3"}}, []string{"a", "b"}, 0},
		{"DelayTooLong", []queue.Entry{{ID: "ok", Body: "1"}, {ID: "late", Body: "2", Delay: queue.MaxDelay + time.Second}}, []string{"late"}, 1},
		{"BodyTooLarge", []queue.Entry{{ID: "big", Body: strings.Repeat("x", 1<<20+1)}, {ID: "ok", Body: "1"}}, []string{"big"}, 1},
		{"EmptyBody", []queue.Entry{{ID: "ok", Body: "1"}, {ID: "empty"}, {ID: "ok2", Body: "2"}}, []string{"empty"}, 2},
	}
	for _, tt := range batchTests {
		t.Run(tt.name, func(t *testing.T) {
			name := mustQueue(t, q, "batch-"+tt.name, queue.Config{Visibility: time.Minute})
			err := q.SendBatch(ctx, name, tt.entries)
			var be *queue.BatchError
			if !errors.As(err, &be) {
				t.Fatalf("err = %v, want a *queue.BatchError", err)
			}
			if len(be.Failed) != len(tt.failed) {
				t.Errorf("BatchError names %d entries (%v), want %v", len(be.Failed), be.Failed, tt.failed)
			}
			for _, id := range tt.failed {
				if be.Failed[id] == nil {
					t.Errorf("BatchError does not name %s: %v", id, be.Failed)
				}
			}
			if v, nv, _ := q.Depth(ctx, name); v+nv != tt.sent {
				t.Errorf("the batch left %d messages, want %d", v+nv, tt.sent)
			}
		})
	}
}

func TestReceiveHonoursContext(t *testing.T) {
	q := openDB(t).Queue()
	name := mustQueue(t, q, "ctx", queue.Config{Visibility: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := q.Receive(ctx, name, 1, 0, time.Minute); !errors.Is(err, context.Canceled) {
		t.Errorf("Receive with a cancelled context: err = %v, want context.Canceled", err)
	}
}

// Two DBs on one file behave like two processes: SQLite locks the file between them and the
// only notifier they share is the file itself.
func TestTwoHandlesShareOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	var dbs [2]*sqlite.DB
	for i := range dbs {
		db, err := sqlite.Open(path)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { db.Close() })
		dbs[i] = db
	}
	ctx := context.Background()

	t.Run("Claim", func(t *testing.T) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		wins := 0
		for w := range 8 {
			wg.Go(func() {
				_, err := dbs[w%2].Table("t").Update(ctx, tk("claim"), table.Update{Set: map[string]any{"owner": int64(w), "leaseUntil": int64(100)}},
					table.Or(table.NotExists("leaseUntil"), table.Lt("leaseUntil", int64(10))))
				if err == nil {
					mu.Lock()
					wins++
					mu.Unlock()
					return
				}
				if _, ok := table.IsConditionFailed(err); !ok {
					t.Errorf("Update: %v", err)
				}
			})
		}
		wg.Wait()
		if wins != 1 {
			t.Errorf("%d writers won the claim across two handles, want exactly 1", wins)
		}
		var adds sync.WaitGroup
		for w := range 8 {
			adds.Go(func() {
				for range 25 {
					if _, err := dbs[w%2].Table("t").Update(ctx, tk("n"), table.Update{Add: map[string]int64{"n": 1}}, table.Cond{}); err != nil {
						t.Errorf("Update: %v", err)
					}
				}
			})
		}
		adds.Wait()
		it, err := dbs[0].Table("t").Get(ctx, tk("n"))
		if err != nil || it.Int("n") != 200 {
			t.Errorf("counter = %v, %v; want 200", it, err)
		}
	})

	t.Run("LongPollSeesOtherHandle", func(t *testing.T) {
		name := mustQueue(t, dbs[0].Queue(), "shared", queue.Config{Visibility: time.Minute})
		go func() {
			if err := dbs[1].Queue().SendBatch(ctx, name, []queue.Entry{{ID: "a", Body: "across"}}); err != nil {
				t.Errorf("SendBatch: %v", err)
			}
		}()
		m := receive1(t, dbs[0].Queue(), name)
		if m.Body != "across" {
			t.Errorf("Body = %q", m.Body)
		}
	})
}

// TestSurvivesKill commits state in a child process, kills it, and reads the state back.
func TestSurvivesKill(t *testing.T) {
	if path := os.Getenv("SQLITE_KILL_HELPER"); path != "" {
		killHelper(path)
		return
	}
	path := filepath.Join(t.TempDir(), "state.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestSurvivesKill$")
	cmd.Env = append(os.Environ(), "SQLITE_KILL_HELPER="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	// The helper blocks reading its stdin until it is killed.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	var got strings.Builder
	for !strings.Contains(got.String(), "committed") {
		n, err := out.Read(buf)
		got.Write(buf[:n])
		if err != nil {
			t.Fatalf("helper ended before committing: %q, %v", got.String(), err)
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatalf("kill: %v", err)
	}
	cmd.Wait()

	db, err := sqlite.Open(path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer db.Close()
	ctx := context.Background()
	it, err := db.Table("t").Get(ctx, tk("k"))
	if err != nil || it.Int("n") != 42 {
		t.Errorf("item after the kill = %v, %v; want n=42", it, err)
	}
	msgs, err := db.Queue().Receive(ctx, "q", 10, time.Minute, time.Second)
	if err != nil || len(msgs) != 1 || msgs[0].Body != "kept" {
		t.Errorf("queue after the kill = %+v, %v; want the one message", msgs, err)
	}
}

// killHelper commits state, says so, and waits to be killed, holding the database open.
func killHelper(path string) {
	ctx := context.Background()
	db, err := sqlite.Open(path)
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	if _, err := db.Queue().CreateQueue(ctx, "q", queue.Config{Visibility: time.Minute}); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	if err := db.Queue().SendBatch(ctx, "q", []queue.Entry{{ID: "a", Body: "kept"}}); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	if err := db.Table("t").Put(ctx, tk("k"), table.Item{"n": int64(42)}, table.ItemNotExists()); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println("committed")
	io.ReadAll(os.Stdin)
	os.Exit(1)
}

// A file whose items were written with keys of one part, before partitioned keys, is refused when
// opened, with ErrOldKeys, and left as it was; a file with no items is taken, and marked.
func TestOpenRefusesItemsOfOldKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`CREATE TABLE items (tbl TEXT NOT NULL, pk TEXT NOT NULL, item TEXT NOT NULL, PRIMARY KEY (tbl, pk));
		INSERT INTO items VALUES ('state', 'u#crawl#abc', '{}')`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	if db, err := sqlite.Open(path); !errors.Is(err, sqlite.ErrOldKeys) {
		if db != nil {
			db.Close()
		}
		t.Fatalf("Open of a file of old keys: err = %v, want ErrOldKeys", err)
	}
	empty := filepath.Join(t.TempDir(), "empty.db")
	db, err := sqlite.Open(empty)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Table("t").Put(context.Background(), tk("a"), table.Item{"n": int64(1)}, table.Cond{}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = sqlite.Open(empty) // its items are of partitioned keys: opened again
	if err != nil {
		t.Fatalf("Open again: %v", err)
	}
	db.Close()
}

// tk is the key s in the partition P.
func tk(s string) table.Key { return table.Key{Part: "P", Sort: s} }
