package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/crawlstack/crawlstack/shared/queue/queuetest"
	"github.com/crawlstack/crawlstack/shared/sqlite"
	"github.com/crawlstack/crawlstack/shared/table"
	"github.com/crawlstack/crawlstack/shared/table/tabletest"
)

func openDB(t testing.TB) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return db
}

func TestQueueConformance(t *testing.T) {
	db := openDB(t)
	queuetest.Run(t, func(*testing.T) queuetest.Backend { return db.Queue() })
}

func TestTableConformance(t *testing.T) {
	db := openDB(t)
	tb := db.Table("state")
	if err := tb.CreateTable(context.Background(), "state"); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	tabletest.Run(t, func(*testing.T) table.Table { return tb })
}
