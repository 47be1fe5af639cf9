package e2etest

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/crawlstack/crawlstack/shared/blob"
	"github.com/crawlstack/crawlstack/shared/localrun"
	"github.com/crawlstack/crawlstack/shared/pipeline"
	"github.com/crawlstack/crawlstack/shared/queue"
	"github.com/crawlstack/crawlstack/shared/table"
)

// Doubler delivers every message twice: SQS's at-least-once delivery, at its worst.
type Doubler struct{ queue.Sender }

// SendBatch sends each entry, and a copy of it under another id.
func (d Doubler) SendBatch(ctx context.Context, q string, entries []queue.Entry) error {
	twice := make([]queue.Entry, 0, 2*len(entries))
	for _, e := range entries {
		twice = append(twice, e, queue.Entry{ID: e.ID + "-dup", Body: e.Body, Delay: e.Delay})
	}
	return d.Sender.SendBatch(ctx, q, twice)
}

// CountingSender counts the messages sent to one queue, and those of them sent with a delay.
// It is safe for concurrent use.
type CountingSender struct {
	queue.Sender
	// Queue is the address of the queue whose messages are counted.
	Queue string
	// Sent and Delayed are the counts.
	Sent, Delayed atomic.Int64
}

// SendBatch counts the entries, then sends them.
func (c *CountingSender) SendBatch(ctx context.Context, q string, entries []queue.Entry) error {
	if q == c.Queue {
		for _, e := range entries {
			c.Sent.Add(1)
			if e.Delay > 0 {
				c.Delayed.Add(1)
			}
		}
	}
	return c.Sender.SendBatch(ctx, q, entries)
}

// ErrCrashed is the error of every write after a Crasher's limit.
var ErrCrashed = errors.New("crashed")

// Crasher counts the writes to every adapter it wraps and, at the limit, "kills the process":
// every later write fails with ErrCrashed and the run's context is cancelled.
type Crasher struct {
	Limit  int64
	Cancel context.CancelFunc
	n      atomic.Int64
}

func (c *Crasher) step() error {
	if c.n.Add(1) > c.Limit {
		c.Cancel()
		return ErrCrashed
	}
	return nil
}

// Wrap returns the ports and the runner's queues of a backend whose writes the crasher counts.
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
	if err := q.c.step(); err != nil {
		return err
	}
	return q.Sender.SendBatch(ctx, name, e)
}

func (q crashQueue) Delete(ctx context.Context, name, receipt string) error {
	if err := q.c.step(); err != nil {
		return err
	}
	return q.Queues.Delete(ctx, name, receipt)
}

func (q crashQueue) DeleteBatch(ctx context.Context, name string, receipts []string) error {
	if err := q.c.step(); err != nil {
		return err
	}
	return q.Queues.DeleteBatch(ctx, name, receipts)
}

type crashTable struct {
	c *Crasher
	table.Table
}

func (t crashTable) Put(ctx context.Context, key string, it table.Item, cond table.Cond) error {
	if err := t.c.step(); err != nil {
		return err
	}
	return t.Table.Put(ctx, key, it, cond)
}

func (t crashTable) Update(ctx context.Context, key string, u table.Update, cond table.Cond) (table.Item, error) {
	if err := t.c.step(); err != nil {
		return nil, err
	}
	return t.Table.Update(ctx, key, u, cond)
}

type crashBlobs struct {
	c *Crasher
	blob.Store
}

func (b crashBlobs) Put(ctx context.Context, key string, body []byte, ct string) error {
	if err := b.c.step(); err != nil {
		return err
	}
	return b.Store.Put(ctx, key, body, ct)
}
