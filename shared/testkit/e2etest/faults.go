package e2etest

import (
	"context"
	"sync/atomic"

	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// Doubler delivers every message twice: SQS's at-least-once delivery, at its worst.
type Doubler struct{ queue.Sender }

// SendBatch sends each entry, and a copy of it under another id.
func (d Doubler) SendBatch(ctx context.Context, q string, entries []queue.Entry) error {
	twice := make([]queue.Entry, 0, 2*len(entries))
	for _, e := range entries {
		dup := e
		dup.ID += "-dup"
		twice = append(twice, e, dup)
	}
	return d.Sender.SendBatch(ctx, q, twice)
}

// CountingSender counts the messages sent to one queue, and those of them sent with a delay; for
// a fetch queue, also the URLs they carry. It is safe for concurrent use.
type CountingSender struct {
	queue.Sender
	// Queue is the address of the queue whose messages are counted, and Slow, if set, another's
	// (the slow lane's, which takes the runs of polite hosts).
	Queue, Slow string
	// Sent and Delayed are the counts of messages; URLs counts a fetch message's URLs (one for any
	// other message).
	Sent, Delayed, URLs atomic.Int64
	// Several counts the fetch messages of more than one URL (on a site of one host, its runs).
	Several atomic.Int64
}

// SendBatch counts the entries, then sends them.
func (c *CountingSender) SendBatch(ctx context.Context, q string, entries []queue.Entry) error {
	if q == c.Queue || (c.Slow != "" && q == c.Slow) {
		for _, e := range entries {
			c.Sent.Add(1)
			if e.Delay > 0 {
				c.Delayed.Add(1)
			}
			n := 1
			if m, err := message.DecodeFetch(e.Body); err == nil {
				n = len(m.URLList())
			}
			c.URLs.Add(int64(n))
			if n > 1 {
				c.Several.Add(1)
			}
		}
	}
	return c.Sender.SendBatch(ctx, q, entries)
}
