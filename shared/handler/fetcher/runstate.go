package fetcher

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/handler/sqsbatch"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// A crawl's run state (crawlstate.Run), as `crawl pause | resume | stop` sets it. The handler reads
// it through the store, which keeps it some seconds (crawlstate.WithRunCheck), so that it costs
// a read per crawl and period, not per message.
//
// A paused crawl's messages go back to the fetch queue whole, delayed by PauseWait, and are
// acknowledged: like a politeness wait, the pause burns no receive count, and claims nothing. A
// stopped crawl's URLs end in the state stopped, each claimed first as any terminal state is, so
// that a URL is never both fetched and stopped.

// DefaultPauseWait is how long a paused crawl's fetch message waits in the queue before it is
// looked at again: a resume takes up to that long to reach the messages, and a pause costs a
// receive and a send per message and period (about $0.30 an hour per million messages at 5 minutes).
const DefaultPauseWait = 5 * time.Minute

// holdPaused marks the messages of paused crawls held, sends them back to the fetch queue delayed
// by PauseWait, and returns the failures of those that could not be sent back. A message whose run
// state cannot be read is not held: fetchOne reads it again and fails its URL if the read fails
// again. A message that does not decode is left to be quarantined.
func (h *Handler) holdPaused(ctx context.Context, ds []*delivery) []events.SQSBatchItemFailure {
	var held []*delivery
	for _, d := range ds {
		if d.msg == nil {
			continue
		}
		if run, err := h.runs.RunOf(ctx, d.msg.Crawl); err != nil || run != crawlstate.Paused {
			continue
		}
		d.held = true
		held = append(held, d)
	}
	if len(held) == 0 {
		return nil
	}
	wait := min(max(h.cfg.PauseWait, time.Second), queue.MaxDelay)
	entries := make([]queue.Entry, len(held))
	for i, d := range held {
		entries[i] = queue.Entry{ID: strconv.Itoa(i), Body: pausedBody(d), Delay: wait}
	}
	if err := h.send.SendBatch(ctx, h.cfg.FetchQueue, entries); err != nil {
		h.log.Warn("send a paused crawl's messages back to wait; they are delivered again", "messages", len(held), "err", err.Error())
		failed := make([]events.SQSBatchItemFailure, len(held))
		for i, d := range held {
			failed[i] = events.SQSBatchItemFailure{ItemIdentifier: d.rec.MessageId}
		}
		return failed
	}
	h.log.Debug("paused crawl: messages sent back to wait", "messages", len(held), "wait", wait)
	return nil
}

// pausedBody is the body a paused crawl's message goes back with: its own (written again as
// this schema version, when it came in the one before), or, when an earlier delivery may hold
// claims, the message re-queued by those deliveries so that they pass on.
func pausedBody(d *delivery) string {
	if sqsbatch.ReceiveCount(d.rec) <= 1 {
		if message.IsCurrent(d.rec.Body) {
			return d.rec.Body
		}
		if body, err := message.Encode(d.msg); err == nil {
			return body
		}
		return d.rec.Body
	}
	m := *d.msg
	m.URLs = slices.Clone(m.URLs)                               // Requeued writes each URL's owners
	handOn(&m, d.rec.MessageId, sqsbatch.ReceiveCount(d.rec)-1) // this delivery claims nothing
	body, err := message.Encode(&m)
	if err != nil {
		return d.rec.Body // sent as it came: its claims are given up to their lease
	}
	return body
}

// endIfStopped ends the URL as stopped when its crawl is stopped. done is true when the URL
// needs nothing more (err then says whether it failed).
func (h *Handler) endIfStopped(ctx context.Context, f *fetched) (done bool, err error) {
	run, err := h.runs.RunOf(ctx, f.msg.Crawl)
	if err != nil {
		return true, h.fail(ctx, f, err)
	}
	if run != crawlstate.StoppedBy {
		return false, nil
	}
	return true, h.finish(ctx, f, crawlstate.Stopped, crawlstate.ErrCrawlStopped)
}
