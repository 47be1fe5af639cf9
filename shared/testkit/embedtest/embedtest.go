// Package embedtest gives handler tests the embedded backends (SQLite queue and table, file blob
// store) on a temporary directory, reads a handler's partial batch response, and counts table calls.
package embedtest

import (
	"context"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/local/fileblob"
	"github.com/crawlstack/crawlstack/shared/local/sqlite"
	"github.com/crawlstack/crawlstack/shared/port/queue"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// Backend is one test's embedded backend.
type Backend struct {
	Queue *sqlite.Queue
	Table *sqlite.Table
	Blobs *fileblob.Store
	// BlobDir is the blob store's root directory, for tests that damage its files.
	BlobDir string
}

// Open opens a fresh backend in t.TempDir() with the named queues (visibility one minute), closed
// when the test ends.
func Open(t testing.TB, queues ...string) Backend {
	t.Helper()
	dir := t.TempDir()
	db, err := sqlite.Open(filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	blobDir := filepath.Join(dir, "blobs")
	blobs, err := fileblob.New(blobDir)
	if err != nil {
		t.Fatal(err)
	}
	q := db.Queue()
	for _, name := range queues {
		if _, err := q.CreateQueue(context.Background(), name, queue.Config{Visibility: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	return Backend{Queue: q, Table: db.Table("crawl"), Blobs: blobs, BlobDir: blobDir}
}

// Handler is an SQS batch handler.
type Handler func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)

// Failures runs h on recs and returns the sorted ids of its BatchItemFailures ([] for none). A
// returned error fails the test: it would fail the whole batch in Lambda.
func Failures(t testing.TB, h Handler, recs ...events.SQSMessage) []string {
	t.Helper()
	resp, err := h(context.Background(), events.SQSEvent{Records: recs})
	if err != nil {
		t.Fatalf("Handle returned an error, which fails the whole batch: %v", err)
	}
	ids := []string{}
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	slices.Sort(ids)
	return ids
}

// CountingTable counts the calls made to the table it wraps: reads (Get, and GetMany as one) and
// writes (Put, Update and Delete). Tests use it to show that a path makes no table call, or that it does.
type CountingTable struct {
	table.Table
	// Only, when set, counts only the calls on keys it holds true (a write to a URL item, or to a
	// politeness slot: see crawlstate.KindOf); a GetMany counts if any of its keys does.
	Only          func(table.Key) bool
	reads, writes atomic.Int64
}

// Writes returns how many Puts, Updates and Deletes were made.
func (c *CountingTable) Writes() int64 { return c.writes.Load() }

func (c *CountingTable) counts(key table.Key) bool { return c.Only == nil || c.Only(key) }

// Reads returns how many Gets and GetManys were made.
func (c *CountingTable) Reads() int64 { return c.reads.Load() }

// Calls returns how many reads and writes were made.
func (c *CountingTable) Calls() int64 { return c.reads.Load() + c.writes.Load() }

func (c *CountingTable) Get(ctx context.Context, key table.Key) (table.Item, error) {
	if c.counts(key) {
		c.reads.Add(1)
	}
	return c.Table.Get(ctx, key)
}

func (c *CountingTable) GetMany(ctx context.Context, keys []table.Key) (map[table.Key]table.Item, error) {
	if slices.ContainsFunc(keys, c.counts) {
		c.reads.Add(1)
	}
	return c.Table.GetMany(ctx, keys)
}

func (c *CountingTable) Put(ctx context.Context, key table.Key, it table.Item, cond table.Cond) error {
	if c.counts(key) {
		c.writes.Add(1)
	}
	return c.Table.Put(ctx, key, it, cond)
}

func (c *CountingTable) Update(ctx context.Context, key table.Key, u table.Update, cond table.Cond) (table.Item, error) {
	if c.counts(key) {
		c.writes.Add(1)
	}
	return c.Table.Update(ctx, key, u, cond)
}

func (c *CountingTable) Delete(ctx context.Context, key table.Key, cond table.Cond) error {
	if c.counts(key) {
		c.writes.Add(1)
	}
	return c.Table.Delete(ctx, key, cond)
}
