package fetcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/observe/metrics"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// A URL's outcomes: the claim on it, its terminal state, a transient failure, and a
// re-queue to wait (for the host, a server's Retry-After, or a fresh invocation).

// claim takes the URL for its message, once. dup is true when the message is a
// duplicate with nothing left to do: the URL is done, or held by a live worker whose own message is
// still in flight. A URL fetched but not parsed may have lost its parse message: it is sent again
// (parse drops duplicates), or the URL is taken back to fetch again if its stored page is gone.
func (h *Handler) claim(ctx context.Context, f *fetched) (dup bool, err error) {
	if f.claimed {
		return false, nil
	}
	if f.w != nil && f.w.claimed {
		// Claimed on an earlier pass of this batch (a run's URL that waited behind the host's
		// other requests: bookRun): as it was then, without another write.
		f.prev, f.claimed = f.w.before, true
		return false, nil
	}
	if f.w != nil {
		f.w.d.claim.CompareAndSwap(claimNone, claimTried)
	}
	prev, err := h.claimURL(ctx, f)
	if errors.Is(err, crawlstate.ErrClaimed) {
		h.log.Debug("duplicate fetch message", "url", f.msg.URL)
		again, err := h.resendParse(ctx, f.msg, f.key, f.owner)
		if again == nil || err != nil {
			return true, err
		}
		prev = again.State
	} else if err != nil {
		return false, err
	}
	f.prev, f.claimed = prev, true
	if f.w != nil {
		f.w.d.claim.Store(claimHeld)
		f.w.claimed, f.w.before = true, prev
	}
	return false, nil
}

// finish records a terminal state for the URL, claiming it first if need be; the
// URL is done once its outcome is recorded with its message's others (book.go).
func (h *Handler) finish(ctx context.Context, f *fetched, to crawlstate.State, cause error) error {
	if dup, err := h.claim(ctx, f); dup || err != nil {
		return err
	}
	if err := h.recordOne(ctx, f, crawlstate.Outcome{Key: f.key, URL: f.msg.URL, State: to, Prev: f.prev, Cause: cause}); err != nil {
		return err
	}
	// A refused address is worth seeing at the default level (a seed or link that points inside a
	// network, or --allow-net missing); the other outcomes are routine and counted by class.
	if cause == nil {
		return nil
	}
	level := slog.LevelDebug
	if errclass.Of(cause) == errclass.SSRF {
		level = slog.LevelInfo
	}
	h.log.Log(ctx, level, "url done without a page", "url", f.msg.URL, "state", string(to),
		"class", string(errclass.Of(cause)), "err", cause.Error())
	return nil
}

// fail handles a transient failure: the URL fails and its message is delivered again, except on
// its last allowed receive, where the URL is recorded as failed and the message moves on to the
// DLQ. A claim it holds stays: its redelivery claims again under the same owner, and a URL of a message
// of several goes back alone carrying the owner (work.go).
func (h *Handler) fail(ctx context.Context, f *fetched, cause error) error {
	if f.w.receives() >= h.cfg.MaxReceive {
		if dup, err := h.claim(ctx, f); dup || err != nil {
			return errors.Join(cause, err) // a duplicate fails too: its message is not ours to drop
		}
		out := crawlstate.Outcome{Key: f.key, URL: f.msg.URL, State: crawlstate.Failed, Prev: f.prev, Cause: cause, Redrivable: true}
		if err := h.recordOne(ctx, f, out); err != nil {
			return err
		}
		return fmt.Errorf("giving up on %s after %d receives: %w", f.msg.URL, h.cfg.MaxReceive, cause)
	}
	h.sayWaiting(ctx, f, cause, 0, f.w.receives())
	return fmt.Errorf("fetch %s: %w", f.msg.URL, cause)
}

// requeue re-sends the fetch message to wait (for its host, or a fresh invocation) and
// acknowledges this one.
func (h *Handler) requeue(ctx context.Context, f *fetched, wait time.Duration) error {
	return h.requeueWith(ctx, f, wait, time.Time{}, 0, -1)
}

// requeueRetry re-sends the fetch message of a URL whose fetch failed for cause, to be tried again
// after wait, with made, the requests it has taken so far.
func (h *Handler) requeueRetry(ctx context.Context, f *fetched, cause error, wait time.Duration, made int) error {
	h.sayWaiting(ctx, f, cause, wait, made)
	return h.requeueWith(ctx, f, wait, time.Time{}, 0, made)
}

// requeueForSlot re-queues the message to wait for the politeness slot just reserved for it,
// interval after the host's previous one.
func (h *Handler) requeueForSlot(ctx context.Context, f *fetched, wait, interval time.Duration) error {
	return h.requeueWith(ctx, f, wait, h.now().Add(wait), interval, -1)
}

// requeueWith re-queues the message; a held slot (not zero) was reserved gap after the host's
// previous one. made, when not negative, makes it a retry after made requests; otherwise it is a
// wait, counted against MaxWaits.
func (h *Handler) requeueWith(ctx context.Context, f *fetched, wait time.Duration, slot time.Time, gap time.Duration, made int) error {
	metrics.Requeued(ctx, requeueReason(slot, made))
	next := *f.msg
	next.Slot, next.Gap = slot, gap.Milliseconds()
	if made >= 0 {
		next.Retries = made
	} else {
		next.Waits++
		if next.Waits > h.cfg.MaxWaits {
			return h.finish(ctx, f, crawlstate.Failed,
				errclass.Errorf(errclass.Internal, "waited for the host %d times", h.cfg.MaxWaits))
		}
	}
	if wait > queue.MaxDelay {
		next.NotBefore = h.now().Add(wait) // SQS delays stop at 15 minutes: the rest is chained
	}
	switch {
	case f.claimed:
		next.Requeued(f.owner, true)
	case mayHold(f.w):
		handOn(&next, f.w.d.rec.MessageId, f.w.receives())
	}
	return h.resend(ctx, &next, wait)
}

// mayHold reports whether the work's message may hold its URL's claim without the work having
// claimed it: an earlier delivery of the message may have (a redelivery), or the message's other
// URLs may have claimed it with theirs (a URL of several, work.go).
func mayHold(w *work) bool {
	return w.receives() > 1 || w.d.several()
}

// cameBack reports whether the work's message came back to the queue: re-queued to wait or to be
// tried again (by a fetcher, or sent back alone from a message of several), or delivered again.
func cameBack(w *work) bool {
	m := w.msg
	return m.Waits > 0 || m.Retries > 0 || len(m.Prev) > 0 || w.receives() > 1
}

// resendUnclaimed re-sends the work's message, which did not claim its URL, to wait.
func (h *Handler) resendUnclaimed(ctx context.Context, w *work, wait time.Duration) error {
	next := *w.msg
	if mayHold(w) {
		handOn(&next, w.d.rec.MessageId, w.receives())
	}
	return h.resend(ctx, &next, wait)
}

// resend sends m to the fetch queue again, delayed by wait (at least a second, at most SQS's
// 15 minutes; a longer wait is chained through m.NotBefore). The new message names the owners
// whose claim may pass to it (message.Fetch.Requeued), so nothing is given back with a write
// (crawlstate.URLs.ClaimGroup).
func (h *Handler) resend(ctx context.Context, m *message.Fetch, wait time.Duration) error {
	body, err := message.Encode(m)
	if err != nil {
		return err
	}
	delay := max(wait, time.Second)
	if !m.Slot.IsZero() {
		// SQS delays are whole seconds: come back early for the slot, by up to the lead and a
		// second, and wait the rest in place.
		delay = max(wait-h.cfg.SlotLead, 0).Truncate(time.Second)
	}
	delay = min(delay, queue.MaxDelay)
	if err := h.send.SendBatch(ctx, h.cfg.FetchQueue, []queue.Entry{{ID: "0", Body: body, Delay: delay}}); err != nil {
		return fmt.Errorf("re-queue %s: %w", m.URL, err)
	}
	return nil
}

// requeueReason names a requeue for the breakdown of the ledger's line (requeues.<reason>).
func requeueReason(slot time.Time, made int) string {
	switch {
	case made >= 0:
		return "retry"
	case !slot.IsZero():
		return "slot"
	}
	return "wait"
}
