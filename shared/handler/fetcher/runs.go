package fetcher

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// Runs. The frontier sends a host that its politeness holds to a page a second or slower its URLs
// in runs (shared/crawl/frontier/runs.go): one message of several URLs of that host, each holding
// one of the host's slots, an interval apart. The message's URLs are claimed together in one
// write (claims.go), as any message's; here they are worked on one after another, in their
// slots' order, each waiting in place for its slot, so that their pages go into the batch's one
// WARC file with one parse message and their outcomes into one write (book.go).
//
// The wait is bounded by the invocation's time: a URL whose slot comes later than a request
// could still start and be stored in it (budget) is not waited for, and goes back to the queue
// alone to wait there, holding its slot and its claim (keepWaiting), as a URL of any message of
// several that must wait does. The URLs fetched before are stored and recorded with the batch.

// lanes returns the batch's work as what runs one after another: each run's URLs in their slots'
// order, and every other URL alone.
func lanes(all []*work) [][]*work {
	var out [][]*work
	seen := map[*delivery]bool{}
	for _, w := range all {
		d := w.d
		if !isRun(d) {
			out = append(out, []*work{w})
			continue
		}
		if seen[d] {
			continue
		}
		seen[d] = true
		run := slices.Clone(d.work)
		slices.SortStableFunc(run, func(a, b *work) int { return a.msg.Slot.Compare(b.msg.Slot) })
		out = append(out, run)
	}
	return out
}

// isRun reports whether d is a run: several URLs, all of one host and each holding a slot.
func isRun(d *delivery) bool {
	if !d.several() {
		return false
	}
	host := ""
	for _, w := range d.work {
		if w.bad != nil || w.msg.Slot.IsZero() {
			return false
		}
		if host == "" {
			host = w.u.Host
		} else if w.u.Host != host {
			return false
		}
	}
	return true
}

// runWaitEarly is how much before a run's next slot its wait in place ends: the URL's checks
// before its request (its crawl, robots.txt, the opt-out list, the host's circuit) run then, and
// the request waits for the slot itself (awaitSlot), so that a slow check on a loaded machine does
// not make it late for its slot (a URL more than half an interval late loses it, and is sent
// back alone to wait for another). keepWaiting keeps a URL this close to its slot.
const runWaitEarly = MaxHeldWait

// awaitRunSlot waits in place, before a run's URL w is worked on, until just before its held
// slot, and reports true, when the invocation leaves time to fetch and store it then; otherwise it
// reports false at once: the rest of the run goes back to the queue to wait there (sendRunBack).
func (h *Handler) awaitRunSlot(ctx context.Context, w *work) bool {
	if dl, ok := ctx.Deadline(); ok && w.msg.Slot.After(dl.Add(-storeReserve-minFetchTime)) {
		return false // past what this invocation can fetch and store
	}
	wait := w.msg.Slot.Sub(h.now()) - runWaitEarly
	if wait <= 0 {
		return true
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// sendRunBack sends the rest of a run, which this invocation has no time to wait for, back to the
// queue as one message, due for its first slot, and reports whether it went. The claim its
// message took for them passes to it (message.Fetch.Requeued, as sendBack hands it on): nothing
// is given back with a write. Unsent, they fail, and each is sent back alone (failures).
func (h *Handler) sendRunBack(ctx context.Context, rest []*work) bool {
	d := rest[0].d
	targets := make([]message.Target, len(rest))
	for i, w := range rest {
		targets[i] = w.msg.Target
	}
	m := message.Pack(d.msg.Crawl, targets)
	handOn(m, d.rec.MessageId, rest[0].receives())
	body, err := message.Encode(m)
	if err == nil {
		delay := min(max(rest[0].msg.Slot.Sub(h.now())-h.cfg.SlotLead, 0).Truncate(time.Second), queue.MaxDelay)
		err = h.send.SendBatch(ctx, h.cfg.FetchQueue, []queue.Entry{{ID: "0", Body: body, Delay: delay}})
	}
	if err != nil {
		h.log.Warn("send the rest of a run back; its URLs are sent back alone", "messageId", d.rec.MessageId,
			"urls", len(rest), "err", err.Error())
		return false
	}
	h.log.Debug("the rest of a run went back to the queue", "messageId", d.rec.MessageId, "urls", len(rest))
	return true
}

// lanesOrder puts the longest lanes first, so that a batch's runs start before its single URLs
// take the workers.
func lanesOrder(ls [][]*work) {
	slices.SortStableFunc(ls, func(a, b []*work) int { return cmp.Compare(len(b), len(a)) })
}
