package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/local/sqlite"
	"github.com/crawlstack/crawlstack/shared/port/queue/queuetest"
	"github.com/crawlstack/crawlstack/shared/port/table"
	"github.com/crawlstack/crawlstack/shared/port/table/tabletest"
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

// TestQueueConformanceOnAFileWithoutAttributes runs the queue suite on a state file made before
// messages had attributes, with a message already waiting in it: Open adds the column, and the old
// message is received with no attributes.
func TestQueueConformanceOnAFileWithoutAttributes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = raw.Exec(`CREATE TABLE queues (name TEXT PRIMARY KEY, visibility INTEGER NOT NULL, dlq TEXT NOT NULL,
			max_receive INTEGER NOT NULL) WITHOUT ROWID;
		CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, queue TEXT NOT NULL, body TEXT NOT NULL,
			sent_at INTEGER NOT NULL, visible_at INTEGER NOT NULL, receives INTEGER NOT NULL DEFAULT 0,
			receipt TEXT NOT NULL DEFAULT '');
		INSERT INTO queues VALUES ('old', 30000, '', 0);
		INSERT INTO messages (queue, body, sent_at, visible_at) VALUES ('old', 'from before', 1, 1);`)
	raw.Close()
	if err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	msgs, err := db.Queue().Receive(context.Background(), "old", 1, time.Minute, 0)
	if err != nil || len(msgs) != 1 || msgs[0].Body != "from before" || msgs[0].Attributes != nil {
		t.Fatalf("Receive = %+v, %v; want the old message with no attributes", msgs, err)
	}
	queuetest.Run(t, func(*testing.T) queuetest.Backend { return db.Queue() })
}

// TestTableConformanceOnTheOlderLayout runs the table suite on a state file made when the items
// table was WITHOUT ROWID: Open keeps that table, and every statement must work on it.
func TestTableConformanceOnTheOlderLayout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	itemsDDL := func() string {
		t.Helper()
		raw, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		if _, err := raw.Exec(`CREATE TABLE IF NOT EXISTS items (tbl TEXT NOT NULL, pk TEXT NOT NULL,
			item TEXT NOT NULL, PRIMARY KEY (tbl, pk)) WITHOUT ROWID`); err != nil {
			t.Fatal(err)
		}
		var ddl string
		if err := raw.QueryRow(`SELECT sql FROM sqlite_schema WHERE name = 'items'`).Scan(&ddl); err != nil {
			t.Fatal(err)
		}
		return ddl
	}
	itemsDDL() // the file as an older version left it
	db, err := sqlite.Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	tabletest.Run(t, func(*testing.T) table.Table { return db.Table("state") })
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if ddl := itemsDDL(); !strings.Contains(ddl, "WITHOUT ROWID") {
		t.Fatalf("the older items table was replaced: %s", ddl)
	}
}
