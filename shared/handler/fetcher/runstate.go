package fetcher

import (
	"context"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/handler/sqsbatch"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// A crawl's run state (crawlstate.Run), as `crawl pause | resume | stop` sets it. The handler reads
// it through the store, which keeps it some seconds (crawlstate.Store.RunCheck), so that it costs
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

// holdPaused takes the messages of paused crawls out of the batch, sends them back to the fetch
// queue delayed by PauseWait, and returns the rest. A message that cannot be sent back fails.
// A message whose run state cannot be read stays in the batch: fetchOne reads it again and fails
// that record if the read fails again.
func (h *Handler) holdPaused(ctx context.Context, ev events.SQSEvent) (events.SQSEvent, []events.SQSBatchItemFailure) {
	var rest events.SQSEvent
	var held []events.SQSMessage
	for _, rec := range ev.Records {
		m, err := message.DecodeFetch(rec.Body)
		if err != nil {
			rest.Records = append(rest.Records, rec) // quarantined as it is
			continue
		}
		if run, err := h.state.RunOf(ctx, m.Crawl); err != nil || run != crawlstate.Paused {
			rest.Records = append(rest.Records, rec)
			continue
		}
		held = append(held, rec)
	}
	if len(held) == 0 {
		return rest, nil
	}
	wait := min(max(h.cfg.PauseWait, time.Second), queue.MaxDelay)
	entries := make([]queue.Entry, len(held))
	for i, rec := range held {
		body := rec.Body
		if sqsbatch.ReceiveCount(rec) > 1 {
			body = withPrev(body, rec.MessageId) // an earlier delivery may hold claims: they pass on
		}
		entries[i] = queue.Entry{ID: strconv.Itoa(i), Body: body, Delay: wait}
	}
	if err := h.send.SendBatch(ctx, h.cfg.FetchQueue, entries); err != nil {
		h.log.Warn("send a paused crawl's messages back to wait; they are delivered again", "messages", len(held), "err", err.Error())
		failed := make([]events.SQSBatchItemFailure, len(held))
		for i, rec := range held {
			failed[i] = events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId}
		}
		return rest, failed
	}
	h.log.Debug("paused crawl: messages sent back to wait", "messages", len(held), "wait", wait)
	return rest, nil
}

// endIfStopped ends the record's URL as stopped when its crawl is stopped. done is true when the
// record needs nothing more (err then says whether it failed).
func (h *Handler) endIfStopped(ctx context.Context, f *fetched) (done bool, err error) {
	run, err := h.state.RunOf(ctx, f.msg.Crawl)
	if err != nil {
		return true, h.fail(ctx, f, err)
	}
	if run != crawlstate.StoppedBy {
		return false, nil
	}
	return true, h.finish(ctx, f, crawlstate.Stopped, crawlstate.ErrCrawlStopped)
}
