package e2etest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/crawlstack/crawlstack/shared/app/pipeline"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/records"
	"github.com/crawlstack/crawlstack/shared/local/localrun"
	"github.com/crawlstack/crawlstack/shared/port/blob"
	"github.com/crawlstack/crawlstack/shared/port/queue"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// ErrCrashed is the error of every write after a Crasher's crash.
var ErrCrashed = errors.New("crashed")

// Kind is a kind of write that a Crasher sees.
type Kind string

// The writes of the pipeline's adapters.
const (
	Send        Kind = "send"         // a SendBatch to a queue
	Delete      Kind = "delete"       // a Delete or DeleteBatch on a queue
	TablePut    Kind = "table put"    // a Put to the table
	TableUpdate Kind = "table update" // an Update of the table
	BlobPut     Kind = "blob put"     // a Put to the blob store
)

// Write is one write that a wrapped adapter is asked to make.
type Write struct {
	Kind Kind
	// Target is the queue's address for a send or delete, the item's key (table.Key.String) for a table write and
	// the object's key for a blob put.
	Target string
	// Item is the kind of a table write's item (crawlstate.KindOf).
	Item string
}

// Step names a place between two steps of the pipeline by the write that begins or ends it, so
// that a crash there does not depend on which worker writes first.
type Step struct {
	// Name says where the crash leaves the pipeline.
	Name string
	kind Kind
	// queues picks the queues of a send or delete from the crawl's resources: fetch's stage is
	// both fetch queues, fetch's and the slow lane's (empty where the backend has none).
	queues func(Resources) []string
	// keyPrefix is the start of a blob put's key.
	keyPrefix string
	// item is the kind of a table write's item (crawlstate.KindOf), when set.
	item string
	// after crashes once the write is made and before its caller hears of it; otherwise the crash
	// comes just before the write.
	after bool
}

// The named crash points of the pipeline (DESIGN invariants 1 and 3).
var (
	// AfterAdmission: schedule wrote the URL items, and is about to send their fetch messages.
	AfterAdmission = Step{Name: "after the URL items are written, before the fetch messages are sent",
		kind: Send, queues: fetchQueues}
	// AfterPageRecorded: fetch stored the pages and recorded them fetched, and is about to send
	// their parse messages.
	AfterPageRecorded = Step{Name: "after the pages are recorded, before the parse messages are sent",
		kind: Send, queues: func(r Resources) []string { return []string{r.Parse} }}
	// AfterLinksSent: parse sent the discovered links, and is about to store the records.
	AfterLinksSent = Step{Name: "after the links are sent, before the records are stored",
		kind: BlobPut, keyPrefix: records.Prefix}
	// AfterRecordsStored: parse stored the records, and is about to mark its messages parsed.
	AfterRecordsStored = Step{Name: "after the records are stored, before the messages are marked parsed",
		kind: BlobPut, keyPrefix: records.Prefix, after: true}
)

// AfterGroupWrite: fetch wrote a fetch message's claims, or its outcomes, on their group's item,
// and has not heard back. The third time comes after a message's claim with its pages not yet
// fetched, or not all: with runs, its URLs are claimed together and fetched one after another
// (shared/handler/fetcher/runs.go), so the crash comes halfway through a run.
var AfterGroupWrite = Step{Name: "after a group's claims or outcomes are written, before fetch hears of it",
	kind: TableUpdate, item: "groups", after: true}

// BeforeDelete is the step after a batch of queue's records is done, before the runner deletes
// their messages; queue is "schedule", "fetch" (either fetch queue: fetch's or the slow lane's) or
// "parse".
func BeforeDelete(queue string) Step {
	return Step{Name: "after a " + queue + " batch is done, before its messages are deleted", kind: Delete,
		queues: func(r Resources) []string {
			if queue == "fetch" {
				return fetchQueues(r)
			}
			return []string{map[string]string{"schedule": r.Schedule, "parse": r.Parse}[queue]}
		}}
}

// fetchQueues are the queues of fetch's stage: fetch's, and the slow lane's where there is one.
func fetchQueues(r Resources) []string {
	if r.FetchSlow == "" {
		return []string{r.Fetch}
	}
	return []string{r.Fetch, r.FetchSlow}
}

// Steps are the named crash points, each tried by the crash scenarios of both backends.
func Steps() []Step {
	return []Step{AfterAdmission, AfterGroupWrite, AfterPageRecorded, AfterLinksSent, AfterRecordsStored,
		BeforeDelete("schedule"), BeforeDelete("fetch"), BeforeDelete("parse")}
}

func (s Step) matches(res Resources, w Write) bool {
	if w.Kind != s.kind {
		return false
	}
	if s.queues != nil && !slices.Contains(s.queues(res), w.Target) {
		return false
	}
	if s.item != "" && w.Item != s.item {
		return false
	}
	return strings.HasPrefix(w.Target, s.keyPrefix)
}

// Crasher "kills the process" at one point of a crawl: every write from then on fails with
// ErrCrashed and the run's context is cancelled. The point is either the Nth time the pipeline
// reaches the step At, or, when At is unset, the write after Limit writes of any kind (the random
// crash matrix).
type Crasher struct {
	// At is the step to crash at, the Nth time a write reaches it (N is 1 when unset).
	At Step
	N  int64
	// Res are the addresses of the crawl's queues, for the steps named by their queue.
	Res Resources
	// Limit is the number of writes allowed before the crash, when At is unset.
	Limit  int64
	Cancel context.CancelFunc

	writes, hits atomic.Int64
	crashed      atomic.Bool
}

// String says where the crasher crashes.
func (c *Crasher) String() string {
	if c.At.Name == "" {
		return fmt.Sprintf("after %d writes", c.Limit)
	}
	return fmt.Sprintf("the %s time the pipeline is %s", ordinal(max(c.N, 1)), c.At.Name)
}

func ordinal(n int64) string {
	switch n {
	case 1:
		return "first"
	case 2:
		return "second"
	case 3:
		return "third"
	}
	return fmt.Sprintf("%dth", n)
}

// Writes is how many writes the crasher has seen.
func (c *Crasher) Writes() int64 { return c.writes.Load() }

// Crashed reports whether the crash happened.
func (c *Crasher) Crashed() bool { return c.crashed.Load() }

func (c *Crasher) crash() error {
	c.crashed.Store(true)
	c.Cancel()
	return ErrCrashed
}

// reached reports whether w is the Nth write to reach the step, on the side of it that after says.
func (c *Crasher) reached(w Write, after bool) bool {
	if c.At.Name == "" || c.At.after != after || !c.At.matches(c.Res, w) {
		return false
	}
	return c.hits.Add(1) == max(c.N, 1)
}

// before is called before each write: it fails the write if the process has crashed or crashes now.
func (c *Crasher) before(w Write) error {
	if c.crashed.Load() {
		return ErrCrashed
	}
	if c.At.Name == "" && c.writes.Add(1) > c.Limit || c.reached(w, false) {
		return c.crash()
	}
	return nil
}

// done is called with each write's result: a crash right after the write loses its answer.
func (c *Crasher) done(w Write, err error) error {
	if err == nil && c.reached(w, true) {
		return c.crash()
	}
	return err
}

// Wrap returns the ports and the runner's queues of a backend whose writes the crasher watches.
func (c *Crasher) Wrap(q Queue, tb table.Table, bl blob.Store) (pipeline.Ports, localrun.Queues) {
	cq := crashQueue{c: c, Queues: q, Sender: q}
	return pipeline.Ports{Queue: cq, Table: crashTable{c, tb}, Blobs: crashBlobs{c, bl}}, cq
}

type crashQueue struct {
	c *Crasher
	localrun.Queues
	queue.Sender
}

func (q crashQueue) SendBatch(ctx context.Context, name string, e []queue.Entry) error {
	w := Write{Kind: Send, Target: name}
	if err := q.c.before(w); err != nil {
		return err
	}
	return q.c.done(w, q.Sender.SendBatch(ctx, name, e))
}

func (q crashQueue) Delete(ctx context.Context, name, receipt string) error {
	w := Write{Kind: Delete, Target: name}
	if err := q.c.before(w); err != nil {
		return err
	}
	return q.c.done(w, q.Queues.Delete(ctx, name, receipt))
}

func (q crashQueue) DeleteBatch(ctx context.Context, name string, receipts []string) error {
	w := Write{Kind: Delete, Target: name}
	if err := q.c.before(w); err != nil {
		return err
	}
	return q.c.done(w, q.Queues.DeleteBatch(ctx, name, receipts))
}

type crashTable struct {
	c *Crasher
	table.Table
}

func (t crashTable) Put(ctx context.Context, key table.Key, it table.Item, cond table.Cond) error {
	w := Write{Kind: TablePut, Target: key.String(), Item: crawlstate.KindOf(key)}
	if err := t.c.before(w); err != nil {
		return err
	}
	return t.c.done(w, t.Table.Put(ctx, key, it, cond))
}

func (t crashTable) Update(ctx context.Context, key table.Key, u table.Update, cond table.Cond) (table.Item, error) {
	w := Write{Kind: TableUpdate, Target: key.String(), Item: crawlstate.KindOf(key)}
	if err := t.c.before(w); err != nil {
		return nil, err
	}
	it, err := t.Table.Update(ctx, key, u, cond)
	return it, t.c.done(w, err)
}

type crashBlobs struct {
	c *Crasher
	blob.Store
}

func (b crashBlobs) Put(ctx context.Context, key string, body []byte, ct string) error {
	w := Write{Kind: BlobPut, Target: key}
	if err := b.c.before(w); err != nil {
		return err
	}
	return b.c.done(w, b.Store.Put(ctx, key, body, ct))
}
