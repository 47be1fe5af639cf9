package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// TestGroupCommitIsolatesFailures runs a group of writes in one transaction, as the writer does
// when writes arrive together: a write that fails after writing keeps none of its writes, and
// the others commit.
func TestGroupCommitIsolatesFailures(t *testing.T) {
	db := openForTest(t)
	ctx := context.Background()
	boom := errors.New("boom")
	put := func(key string, fail error) func(context.Context, *sql.Conn) error {
		return func(ctx context.Context, _ *sql.Conn) error {
			if _, err := db.items.put.ExecContext(ctx, "t", rowKey(tk(key)), `{"n":1}`); err != nil {
				return err
			}
			return fail
		}
	}
	// A write with one statement runs without a savepoint: when that statement fails, SQLite
	// undoes what it changed (here the row it had inserted first) and keeps the rest.
	failingStatement := func(ctx context.Context, c *sql.Conn) error {
		_, err := c.ExecContext(ctx, `INSERT INTO items (tbl, pk, item) VALUES ('t', 'e', '{}'), ('t', NULL, '{}')`)
		return err
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	group := []writeReq{
		{ctx: ctx, fn: put("a", nil), done: make(chan error, 1)},
		{ctx: ctx, fn: put("b", boom), done: make(chan error, 1)},
		{ctx: cancelled, fn: put("c", nil), done: make(chan error, 1)},
		{ctx: ctx, fn: put("d", nil), oneChange: true, done: make(chan error, 1)},
		{ctx: ctx, fn: failingStatement, oneChange: true, done: make(chan error, 1)},
		{ctx: ctx, fn: put("f", nil), done: make(chan error, 1)},
	}
	db.commitGroup(group)
	if err := <-group[4].done; err == nil {
		t.Error("the failing statement: err = nil")
	}
	if _, err := db.Table("t").Get(ctx, tk("e")); !errors.Is(err, table.ErrNotFound) {
		t.Errorf("item e of the failed statement: err = %v, want ErrNotFound", err)
	}

	tests := []struct {
		key     string
		req     int // the write in group
		wantErr error
		stored  bool
	}{
		{"a", 0, nil, true},
		{"b", 1, boom, false},
		{"c", 2, context.Canceled, false},
		{"d", 3, nil, true},
		{"f", 5, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			if err := <-group[tt.req].done; !errors.Is(err, tt.wantErr) && err != tt.wantErr {
				t.Errorf("write %s: err = %v, want %v", tt.key, err, tt.wantErr)
			}
			_, err := db.Table("t").Get(ctx, tk(tt.key))
			if stored := err == nil; stored != tt.stored {
				t.Errorf("item %s stored = %v (%v), want %v", tt.key, stored, err, tt.stored)
			}
		})
	}
}

// TestGroupThatCannotCommitLeavesTheWriterUsable releases a write's savepoint from inside the
// write, so that the writer's own release fails and with it the whole group: every write of it
// gets the error, none is kept, and the writer rolls the transaction back and goes on with the
// next writes.
func TestGroupThatCannotCommitLeavesTheWriterUsable(t *testing.T) {
	db := openForTest(t)
	ctx := context.Background()
	group := []writeReq{
		{ctx: ctx, fn: func(ctx context.Context, _ *sql.Conn) error {
			_, err := db.items.put.ExecContext(ctx, "t", rowKey(tk("a")), `{"n":1}`)
			return err
		}, done: make(chan error, 1)},
		{ctx: ctx, fn: func(ctx context.Context, c *sql.Conn) error {
			_, err := c.ExecContext(ctx, "RELEASE op") // the writer's release of it then fails
			return err
		}, done: make(chan error, 1)},
	}
	db.commitGroup(group)
	for i, req := range group {
		if err := <-req.done; err == nil {
			t.Errorf("write %d of the failed group: err = nil, want the group's error", i)
		}
	}
	tb := db.Table("t")
	if _, err := tb.Get(ctx, tk("a")); !errors.Is(err, table.ErrNotFound) {
		t.Errorf("Get(a) after the failed group: err = %v, want ErrNotFound", err)
	}
	if err := tb.Put(ctx, tk("b"), table.Item{"n": int64(2)}, table.Cond{}); err != nil {
		t.Fatalf("Put after the failed group: %v", err)
	}
	if _, err := tb.Get(ctx, tk("b")); err != nil {
		t.Errorf("Get(b): %v", err)
	}
}

// openForTest opens a state file in a temporary directory, closed at the end of the test.
func openForTest(t *testing.T) *DB {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// tk is the key s in the partition P.
func tk(s string) table.Key { return table.Key{Part: "P", Sort: s} }
