package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
)

// TestGroupCommitIsolatesFailures runs a group of writes in one transaction, as the writer does
// when writes arrive together: a write that fails after writing keeps none of its writes, and
// the others commit.
func TestGroupCommitIsolatesFailures(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer db.Close()
	ctx := context.Background()
	boom := errors.New("boom")
	put := func(key string, fail error) func(context.Context, *sql.Tx) error {
		return func(ctx context.Context, tx *sql.Tx) error {
			if _, err := tx.StmtContext(ctx, db.items.put).ExecContext(ctx, "t", key, `{"n":1}`); err != nil {
				return err
			}
			return fail
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	group := []writeReq{
		{ctx: ctx, fn: put("a", nil), done: make(chan error, 1)},
		{ctx: ctx, fn: put("b", boom), done: make(chan error, 1)},
		{ctx: cancelled, fn: put("c", nil), done: make(chan error, 1)},
		{ctx: ctx, fn: put("d", nil), done: make(chan error, 1)},
	}
	db.commitGroup(group)

	tests := []struct {
		key     string
		wantErr error
		stored  bool
	}{
		{"a", nil, true},
		{"b", boom, false},
		{"c", context.Canceled, false},
		{"d", nil, true},
	}
	for i, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			if err := <-group[i].done; !errors.Is(err, tt.wantErr) && err != tt.wantErr {
				t.Errorf("write %s: err = %v, want %v", tt.key, err, tt.wantErr)
			}
			_, err := db.Table("t").Get(ctx, tt.key)
			if stored := err == nil; stored != tt.stored {
				t.Errorf("item %s stored = %v (%v), want %v", tt.key, stored, err, tt.stored)
			}
		})
	}
}
