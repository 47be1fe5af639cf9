// Package sqlite is the embedded adapter family for the queue and table ports: a durable
// SQS-like queue and a DynamoDB-like table in one SQLite file under the local state directory,
// on the pure-Go modernc.org/sqlite driver (no cgo).
//
// Every write runs in one BEGIN IMMEDIATE transaction on a single writer connection, so
// conditional writes and receives are atomic across goroutines and across processes sharing the
// file. The file is in WAL mode with synchronous=NORMAL: a committed write survives a process
// kill (an OS crash may lose the last few commits). Reads use a separate pool of connections.
//
// The queue is plain SQL rather than maragu.dev/goqite: goqite has a visibility timeout and a
// receive count, but no dead-letter queue, no move at receive time, no redrive and no waking
// of long polls on send, and those are the semantics the crawler depends on.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

const schema = `
CREATE TABLE IF NOT EXISTS queues (
	name        TEXT PRIMARY KEY,
	visibility  INTEGER NOT NULL, -- default visibility timeout, ms
	dlq         TEXT NOT NULL,    -- dead-letter queue name, '' for none
	max_receive INTEGER NOT NULL  -- receives before the move to dlq, 0 for never
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS messages (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	queue      TEXT NOT NULL,
	body       TEXT NOT NULL,
	sent_at    INTEGER NOT NULL, -- unix ms
	visible_at INTEGER NOT NULL, -- unix ms; in flight or delayed while in the future
	receives   INTEGER NOT NULL DEFAULT 0,
	receipt    TEXT NOT NULL DEFAULT '' -- the latest receive's handle
);
CREATE INDEX IF NOT EXISTS messages_due ON messages (queue, visible_at);
CREATE TABLE IF NOT EXISTS tables (name TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS items (
	tbl  TEXT NOT NULL,
	pk   TEXT NOT NULL,
	item TEXT NOT NULL, -- JSON object of the attributes
	PRIMARY KEY (tbl, pk)
) WITHOUT ROWID;
`

// DB is one SQLite state file. It hands out the queue and the tables stored in it.
// It is safe for concurrent use; Close it when done.
type DB struct {
	w, r  *sql.DB // w: the single writer connection; r: readers
	wake  *notifier
	queue *Queue
	items itemStmts

	mu     sync.Mutex
	tables map[string]*Table
}

// Open opens (creating if needed) the SQLite file at path.
func Open(path string) (*DB, error) {
	if path == "" || strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("open sqlite %q: the path must be non-empty and contain no '?'", path)
	}
	const pragmas = "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
	w, err := sql.Open("sqlite", path+"?"+pragmas+"&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	if _, err := w.Exec(schema); err != nil {
		w.Close()
		return nil, fmt.Errorf("create schema in %s: %w", path, err)
	}
	r, err := sql.Open("sqlite", path+"?"+pragmas+"&_pragma=query_only(1)")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open sqlite %s for reading: %w", path, err)
	}
	r.SetMaxOpenConns(4)
	r.SetMaxIdleConns(4)
	db := &DB{w: w, r: r, wake: newNotifier(), tables: map[string]*Table{}}
	q, err := newQueue(db)
	if err != nil {
		db.Close()
		return nil, err
	}
	db.queue = q
	if err := db.items.prepare(w); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// Close closes the file. Calls in progress may fail.
func (db *DB) Close() error {
	return errors.Join(db.w.Close(), db.r.Close())
}

// Queue returns the queue store. Queue addresses are plain names.
func (db *DB) Queue() *Queue { return db.queue }

// Table returns the table called name. Use CreateTable (table.Admin) to register it; the items
// of a table that was never created are still stored.
func (db *DB) Table(name string) *Table {
	db.mu.Lock()
	defer db.mu.Unlock()
	t, ok := db.tables[name]
	if !ok {
		t = &Table{db: db, name: name}
		db.tables[name] = t
	}
	return t
}

// write runs fn in one BEGIN IMMEDIATE transaction and commits it when fn returns nil.
func (db *DB) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// notifier wakes the long polls of a queue when something may have become receivable.
type notifier struct {
	mu sync.Mutex
	ch map[string]chan struct{}
}

func newNotifier() *notifier { return &notifier{ch: map[string]chan struct{}{}} }

// watch returns a channel that is closed at the next notify of queue.
func (n *notifier) watch(queue string) <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	c, ok := n.ch[queue]
	if !ok {
		c = make(chan struct{})
		n.ch[queue] = c
	}
	return c
}

// notify wakes every watcher of queue.
func (n *notifier) notify(queue string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if c, ok := n.ch[queue]; ok {
		close(c)
		delete(n.ch, queue)
	}
}
