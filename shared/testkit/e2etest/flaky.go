package e2etest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/crawlstack/crawlstack/shared/app/pipeline"
	"github.com/crawlstack/crawlstack/shared/local/localrun"
	"github.com/crawlstack/crawlstack/shared/port/blob"
	"github.com/crawlstack/crawlstack/shared/port/queue"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// ErrInjected is the error of a call that a Flaky adapter fails on purpose: a transient fault of
// the service (a throttle, a dropped connection), which the same call may survive when tried again.
var ErrInjected = errors.New("injected transient fault")

// Flaky fails every Every-th call to each adapter it wraps (the queue, the table and the blob
// store count their calls apart), reads and writes alike, while the run goes on: the faults of a
// busy service, not a crash. It is safe for concurrent use.
type Flaky struct {
	Every               int64
	queue, table, blobs faultCounter
}

type faultCounter struct{ calls, faults atomic.Int64 }

// Faults returns how many calls of the queue, the table and the blob store were failed.
func (f *Flaky) Faults() (queue, table, blobs int64) {
	return f.queue.faults.Load(), f.table.faults.Load(), f.blobs.faults.Load()
}

func (f *Flaky) call(c *faultCounter, op string) error {
	if f.Every <= 0 || c.calls.Add(1)%f.Every != 0 {
		return nil
	}
	c.faults.Add(1)
	return fmt.Errorf("%s: %w", op, ErrInjected)
}

// Wrap returns the ports and the runner's queues of a backend whose calls fail now and then.
// The runner's queues keep the backend's one-look count of its queues (localrun's snapshotter),
// flaky too, when the backend has one.
func (f *Flaky) Wrap(q Queue, tb table.Table, bl blob.Store) (pipeline.Ports, localrun.Queues) {
	fq := flakyQueue{f: f, q: q}
	ports := pipeline.Ports{Queue: fq, Table: flakyTable{f, tb}, Blobs: flakyBlobs{f, bl}}
	if p, ok := q.(pender); ok {
		return ports, flakyPender{fq, p}
	}
	return ports, fq
}

type flakyQueue struct {
	f *Flaky
	q Queue
}

func (q flakyQueue) SendBatch(ctx context.Context, name string, e []queue.Entry) error {
	if err := q.f.call(&q.f.queue, "send"); err != nil {
		return err
	}
	return q.q.SendBatch(ctx, name, e)
}

func (q flakyQueue) Receive(ctx context.Context, name string, n int, visibility, wait time.Duration) ([]queue.Message, error) {
	if err := q.f.call(&q.f.queue, "receive"); err != nil {
		return nil, err
	}
	return q.q.Receive(ctx, name, n, visibility, wait)
}

func (q flakyQueue) Delete(ctx context.Context, name, receipt string) error {
	if err := q.f.call(&q.f.queue, "delete"); err != nil {
		return err
	}
	return q.q.Delete(ctx, name, receipt)
}

func (q flakyQueue) DeleteBatch(ctx context.Context, name string, receipts []string) error {
	if err := q.f.call(&q.f.queue, "delete batch"); err != nil {
		return err
	}
	return q.q.DeleteBatch(ctx, name, receipts)
}

func (q flakyQueue) ChangeVisibility(ctx context.Context, name, receipt string, timeout time.Duration) error {
	if err := q.f.call(&q.f.queue, "change visibility"); err != nil {
		return err
	}
	return q.q.ChangeVisibility(ctx, name, receipt, timeout)
}

func (q flakyQueue) Depth(ctx context.Context, name string) (int, int, error) {
	if err := q.f.call(&q.f.queue, "depth"); err != nil {
		return 0, 0, err
	}
	return q.q.Depth(ctx, name)
}

// pender is a backend that counts several queues in one look (the embedded queue).
type pender interface {
	Pending(ctx context.Context, queues ...string) (int, error)
}

type flakyPender struct {
	flakyQueue
	p pender
}

func (q flakyPender) Pending(ctx context.Context, names ...string) (int, error) {
	if err := q.f.call(&q.f.queue, "pending"); err != nil {
		return 0, err
	}
	return q.p.Pending(ctx, names...)
}

type flakyTable struct {
	f *Flaky
	t table.Table
}

func (t flakyTable) Get(ctx context.Context, key table.Key) (table.Item, error) {
	if err := t.f.call(&t.f.table, "get"); err != nil {
		return nil, err
	}
	return t.t.Get(ctx, key)
}

func (t flakyTable) GetMany(ctx context.Context, keys []table.Key) (map[table.Key]table.Item, error) {
	if err := t.f.call(&t.f.table, "get many"); err != nil {
		return nil, err
	}
	return t.t.GetMany(ctx, keys)
}

func (t flakyTable) Put(ctx context.Context, key table.Key, it table.Item, cond table.Cond) error {
	if err := t.f.call(&t.f.table, "put"); err != nil {
		return err
	}
	return t.t.Put(ctx, key, it, cond)
}

func (t flakyTable) Update(ctx context.Context, key table.Key, u table.Update, cond table.Cond) (table.Item, error) {
	if err := t.f.call(&t.f.table, "update"); err != nil {
		return nil, err
	}
	return t.t.Update(ctx, key, u, cond)
}

func (t flakyTable) Delete(ctx context.Context, key table.Key, cond table.Cond) error {
	if err := t.f.call(&t.f.table, "delete"); err != nil {
		return err
	}
	return t.t.Delete(ctx, key, cond)
}

func (t flakyTable) Query(ctx context.Context, part, prefix string, fn func(string, table.Item) error) error {
	if err := t.f.call(&t.f.table, "query"); err != nil {
		return err
	}
	return t.t.Query(ctx, part, prefix, fn)
}

func (t flakyTable) QueryAfter(ctx context.Context, part, prefix, after string, fn func(string, table.Item) error) error {
	if err := t.f.call(&t.f.table, "query"); err != nil {
		return err
	}
	return t.t.QueryAfter(ctx, part, prefix, after, fn)
}

type flakyBlobs struct {
	f *Flaky
	b blob.Store
}

func (b flakyBlobs) Put(ctx context.Context, key string, body []byte, ct string) error {
	if err := b.f.call(&b.f.blobs, "put"); err != nil {
		return err
	}
	return b.b.Put(ctx, key, body, ct)
}

func (b flakyBlobs) PutIfAbsent(ctx context.Context, key string, body []byte, ct string) error {
	if err := b.f.call(&b.f.blobs, "put if absent"); err != nil {
		return err
	}
	return b.b.PutIfAbsent(ctx, key, body, ct)
}

func (b flakyBlobs) Get(ctx context.Context, key string) ([]byte, error) {
	if err := b.f.call(&b.f.blobs, "get"); err != nil {
		return nil, err
	}
	return b.b.Get(ctx, key)
}

func (b flakyBlobs) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	if err := b.f.call(&b.f.blobs, "get range"); err != nil {
		return nil, err
	}
	return b.b.GetRange(ctx, key, offset, length)
}

func (b flakyBlobs) List(ctx context.Context, prefix string) ([]string, error) {
	if err := b.f.call(&b.f.blobs, "list"); err != nil {
		return nil, err
	}
	return b.b.List(ctx, prefix)
}

var (
	_ table.Table = flakyTable{}
	_ blob.Store  = flakyBlobs{}
	_ Queue       = flakyQueue{}
)
