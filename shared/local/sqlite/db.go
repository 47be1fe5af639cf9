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
	"runtime"
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
	receipt    TEXT NOT NULL DEFAULT '', -- the latest receive's handle
	attrs      TEXT NOT NULL DEFAULT ''  -- the message attributes as a JSON object, '' for none
);
CREATE INDEX IF NOT EXISTS messages_due ON messages (queue, visible_at);
CREATE TABLE IF NOT EXISTS tables (name TEXT PRIMARY KEY) WITHOUT ROWID;
-- A rowid table, so rows lie in the order they were first written: the claim, result and parsed
-- mark of a URL (keyed by a hash, in no order) land on the pages of URLs admitted around the same
-- time, and a crawl writes about a third fewer WAL pages than with rows clustered by key. A file
-- made before this layout keeps its WITHOUT ROWID table, which the same statements use.
CREATE TABLE IF NOT EXISTS items (
	tbl  TEXT NOT NULL,
	pk   TEXT NOT NULL,
	item TEXT NOT NULL, -- JSON object of the attributes
	PRIMARY KEY (tbl, pk)
);
`

// DB is one SQLite state file. It hands out the queue and the tables stored in it.
// It is safe for concurrent use; Close it when done.
type DB struct {
	w, r  *sql.DB // w: the single writer connection; r: readers
	wake  *notifier
	queue *Queue

	// conn is w's one connection, held by the writer goroutine for the DB's lifetime. Every
	// writer statement is prepared on it and runs on it directly: no database/sql transaction
	// (with its set-up and its watcher of the context) per group, and no statement bound to a
	// transaction per use.
	conn *sql.Conn
	// The statements that open and close each group's transaction and wrap each of its writes.
	begin, commit, rollback, savepoint, release, rollbackTo *sql.Stmt

	writes chan writeReq
	quit   chan struct{}
	done   chan struct{}
	items  itemStmts

	closeOnce sync.Once
	closeErr  error

	mu     sync.Mutex
	tables map[string]*Table
}

// readers is how many reader connections a DB keeps.
const readers = 4

// Open opens (creating if needed) the SQLite file at path.
func Open(path string) (*DB, error) {
	if path == "" || strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("open sqlite %q: the path must be non-empty and contain no '?'", path)
	}
	const pragmas = "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
	w, err := sql.Open("sqlite", path+"?"+pragmas)
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
	if err := addAttrsColumn(w); err != nil {
		w.Close()
		return nil, fmt.Errorf("upgrade schema in %s: %w", path, err)
	}
	if err := checkKeyLayout(w); err != nil {
		w.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	r, err := sql.Open("sqlite", path+"?"+pragmas+"&_pragma=query_only(1)")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open sqlite %s for reading: %w", path, err)
	}
	r.SetMaxOpenConns(readers)
	r.SetMaxIdleConns(readers)
	conn, err := w.Conn(context.Background())
	if err != nil {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("open sqlite %s for writing: %w", path, err)
	}
	db := &DB{w: w, r: r, conn: conn, wake: newNotifier(), tables: map[string]*Table{},
		writes: make(chan writeReq), quit: make(chan struct{}), done: make(chan struct{})}
	err = db.prepareAll([]prepared{{&db.begin, "BEGIN IMMEDIATE"}, {&db.commit, "COMMIT"}, {&db.rollback, "ROLLBACK"},
		{&db.savepoint, "SAVEPOINT op"}, {&db.release, "RELEASE op"}, {&db.rollbackTo, "ROLLBACK TO op"}})
	if err != nil {
		conn.Close()
		w.Close()
		r.Close()
		return nil, fmt.Errorf("prepare transaction statement: %w", err)
	}
	go db.writer()
	q, err := newQueue(db)
	if err != nil {
		db.Close()
		return nil, err
	}
	db.queue = q
	if err := db.items.prepare(db, r); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// Close closes the file. Calls in progress may fail.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		close(db.quit)
		<-db.done
		db.closeErr = errors.Join(db.conn.Close(), db.w.Close(), db.r.Close())
	})
	return db.closeErr
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

// errClosed is returned by writes after Close.
var errClosed = errors.New("sqlite state file is closed")

// maxGroup is the most writes committed together in one transaction.
const maxGroup = 64

type writeReq struct {
	ctx context.Context
	fn  func(ctx context.Context, c *sql.Conn) error
	// oneChange is a write that changes the file with one statement at most, the last thing it
	// does: it runs without a savepoint (see writeOne).
	oneChange bool
	done      chan error
}

// prepared is a statement to prepare on the writer connection, and where to keep it.
type prepared struct {
	p   **sql.Stmt
	sql string
}

// prepareAll prepares each statement on the writer connection.
func (db *DB) prepareAll(stmts []prepared) error {
	for _, st := range stmts {
		var err error
		if *st.p, err = db.conn.PrepareContext(context.Background(), st.sql); err != nil {
			return err
		}
	}
	return nil
}

// write runs fn in a BEGIN IMMEDIATE transaction on the writer connection c and returns once
// that transaction has committed (or fn's error, in which case none of fn's writes are kept). fn
// runs its statements on c: the writer statements prepared on it, or c's own Exec and Query.
//
// Writes waiting at the same time are committed together (group commit): each runs in its own
// savepoint, so a failing fn rolls back only its own writes, and the one commit makes them all
// durable before any caller returns. This is what lets 32 workers share one SQLite file.
// fn runs on the writer goroutine and must not call write.
func (db *DB) write(ctx context.Context, fn func(ctx context.Context, c *sql.Conn) error) error {
	return db.send(writeReq{ctx: ctx, fn: fn, done: make(chan error, 1)})
}

// writeOne is write for an fn that changes the file with one statement at most, and returns that
// statement's error (or an error from before it) without doing anything after it. SQLite undoes a
// failed statement's own changes, so such an fn needs no savepoint of its own: two statements
// fewer for each of the table's conditional writes, which are most of a crawl's writes.
func (db *DB) writeOne(ctx context.Context, fn func(ctx context.Context, c *sql.Conn) error) error {
	return db.send(writeReq{ctx: ctx, fn: fn, oneChange: true, done: make(chan error, 1)})
}

// send hands req to the writer goroutine and waits for its group to commit.
func (db *DB) send(req writeReq) error {
	ctx := req.ctx
	select {
	case db.writes <- req:
	case <-ctx.Done():
		return ctx.Err()
	case <-db.quit:
		return errClosed
	}
	return <-req.done
}

// writer is the goroutine that owns the writer connection and commits groups of writes.
func (db *DB) writer() {
	defer close(db.done)
	for {
		var group []writeReq
		select {
		case req := <-db.writes:
			group = append(group, req)
		case <-db.quit:
			return
		}
		// Let the goroutines that are ready to run queue their writes before the group closes:
		// a bigger group shares one commit, and a commit costs more CPU than any write in it.
		runtime.Gosched()
	collect:
		for len(group) < maxGroup {
			select {
			case req := <-db.writes:
				group = append(group, req)
			default:
				break collect
			}
		}
		db.commitGroup(group)
	}
}

func (db *DB) commitGroup(group []writeReq) {
	errs := make([]error, len(group))
	err := db.runGroup(group, errs)
	for i, req := range group {
		if err != nil && errs[i] == nil {
			errs[i] = err
		}
		req.done <- errs[i]
	}
}

// runGroup runs every request in one transaction, recording each one's own error in errs; it
// returns an error that fails the whole group (begin or commit).
func (db *DB) runGroup(group []writeReq, errs []error) error {
	bg := context.Background()
	if _, err := db.begin.ExecContext(bg); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	abort := func(step string, err error) error {
		db.rollback.ExecContext(bg) // err is what failed: a rollback that fails found no transaction open
		return fmt.Errorf("%s: %w", step, err)
	}
	for i, req := range group {
		if err := req.ctx.Err(); err != nil {
			errs[i] = err
			continue
		}
		// The request's own deadline must not interrupt the shared transaction.
		ctx := context.WithoutCancel(req.ctx)
		if req.oneChange {
			errs[i] = req.fn(ctx, db.conn)
			continue
		}
		if _, err := db.savepoint.ExecContext(ctx); err != nil {
			return abort("savepoint", err)
		}
		errs[i] = req.fn(ctx, db.conn)
		if errs[i] != nil {
			if _, err := db.rollbackTo.ExecContext(ctx); err != nil {
				return abort("roll back to savepoint", err)
			}
		}
		if _, err := db.release.ExecContext(ctx); err != nil {
			return abort("release savepoint", err)
		}
	}
	if _, err := db.commit.ExecContext(bg); err != nil {
		return abort("commit", err)
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

// keyLayout is the file's user_version once its items' keys have a partition and a sort key
// (table.Key). A file whose items were written before has none: its keys name no partition.
const keyLayout = 2

// ErrOldKeys is the error of a state file whose items were written with keys of one part, by a
// version before partitioned keys. Its crawls cannot be read or resumed by this version.
var ErrOldKeys = errors.New("the state file holds items written by an earlier version, with keys of one part; " +
	"finish or drop its crawls with that version, or start a new state directory (docs/state.md)")

// checkKeyLayout marks a file with no items as one of partitioned keys, and refuses a file
// whose items came before them.
func checkKeyLayout(w *sql.DB) error {
	var version int
	if err := w.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil {
		return fmt.Errorf("read the file's layout version: %w", err)
	}
	if version >= keyLayout {
		return nil
	}
	var items int
	if err := w.QueryRow(`SELECT EXISTS (SELECT 1 FROM items)`).Scan(&items); err != nil {
		return fmt.Errorf("look for items: %w", err)
	}
	if items > 0 {
		return ErrOldKeys
	}
	if _, err := w.Exec(fmt.Sprintf(`PRAGMA user_version = %d`, keyLayout)); err != nil {
		return fmt.Errorf("mark the file's layout: %w", err)
	}
	return nil
}

// addAttrsColumn gives a state file made before messages had attributes its attrs column.
func addAttrsColumn(w *sql.DB) error {
	var n int
	if err := w.QueryRow(`SELECT COUNT(*) FROM pragma_table_info('messages') WHERE name = 'attrs'`).Scan(&n); err != nil {
		return fmt.Errorf("look for messages.attrs: %w", err)
	}
	if n > 0 {
		return nil
	}
	if _, err := w.Exec(`ALTER TABLE messages ADD COLUMN attrs TEXT NOT NULL DEFAULT ''`); err != nil {
		return fmt.Errorf("add messages.attrs: %w", err)
	}
	return nil
}
