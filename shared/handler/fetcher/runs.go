package fetcher

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// Runs. The frontier sends a host that its politeness holds to a page a second or slower its URLs
// in runs (shared/crawl/frontier/runs.go): one message of several URLs of that host, sent at once
// and holding no slot. The message's URLs are claimed together in one write (claims.go), as any
// message's; here they are worked on one after another, so that their pages go into the batch's
// one WARC file with one parse message and their outcomes into one write (book.go). The runs of
// one host and crawl in a batch are worked on as one run.
//
// A run books its slots as it starts, with one write on the host's slot item for all its URLs,
// from the host's next free slot (bookRun: crawlstate.Hosts.ReserveRun), and each URL waits in
// place for its own. So a run that waited in the queue, however long, loses no slot: it had none.
// A URL late for its slot (a slow request before it) takes the run's next slot still ahead, and
// the URLs after it shift along; when none is left, the rest of the run books again, as one range
// in one write. A host booked further ahead than runFirstWait (another run of it, in another
// invocation) sends the rest of the run back to the queue whole, as one message due when the
// host is free, holding the run's claim (sendRunBack), unless the invocation's runs keep it alive
// until then anyway (stayWithin): the run then books its slots from the host's next free one and
// waits in place, without the host's place in this process or a GET's room (awaitBehind). No URL
// of a run goes back alone for being late.
//
// The wait is bounded by the invocation's time: no slot is booked later than a request could
// still start and be stored in it (runHorizon); the URLs left go back to the queue as one
// message. The URLs fetched before are stored and recorded with the batch.

// runLane is the work of a batch's runs of one host and crawl, in the order it is worked on.
type runLane struct {
	ws []*work
	// due, once set, is when the host is free for the rest of the run, from its URL at from on:
	// those go back to the queue to wait for it.
	due  time.Time
	from int
	back bool
	// waitAt, once set, is the URL at that place: it booked slots further ahead than a run waits
	// for with a GET's room held (bookRun), and is worked on again once its slot is near.
	waitAt int
	wait   bool
}

// backFrom reports whether the rest of the run, from its URL at j, goes back to the queue, and
// when it is due. A nil lane (a URL worked on alone) has no rest.
func (l *runLane) backFrom(j int) (time.Time, bool) {
	if l == nil || !l.back || l.from != j {
		return time.Time{}, false
	}
	return l.due, true
}

// waitsAt reports, once, whether the lane's URL at j booked a slot further ahead and is to be
// worked on again when that slot is near. A nil lane never does.
func (l *runLane) waitsAt(j int) bool {
	if l == nil || !l.wait || l.waitAt != j {
		return false
	}
	l.wait = false
	return true
}

// lanes returns the batch's work as what runs one after another: the runs of each host and crawl,
// one message's URLs after another's, each message's in their slots' order (a run sent back with
// the slots it held), then the batch's messages of one URL of that host and crawl (joined), and
// every other URL alone. A URL alone of a host whose run the batch works on would find the host
// booked as far as the run goes, and go back to the queue to come back alone at its slot: in the
// realistic crawl, the largest hosts' URLs that went back alone did so by the dozen, each coming
// back in a batch, an invocation and a WARC file of its own. In the run's lane it takes the run's
// next slot, booked with the run's in one write.
func lanes(all []*work) [][]*work {
	var out [][]*work
	type hostKey struct{ crawl, host string }
	runs := map[hostKey]*runLane{}
	var order []hostKey
	var alone []*work
	seen := map[*delivery]bool{}
	for _, w := range all {
		d := w.d
		if !isRun(d) {
			alone = append(alone, w)
			continue
		}
		if seen[d] {
			continue
		}
		seen[d] = true
		run := slices.Clone(d.work)
		slices.SortStableFunc(run, func(a, b *work) int { return a.msg.Slot.Compare(b.msg.Slot) })
		k := hostKey{d.msg.Crawl, run[0].u.Host}
		l := runs[k]
		if l == nil {
			l = &runLane{}
			runs[k] = l
			order = append(order, k)
		}
		l.ws = append(l.ws, run...)
	}
	for _, w := range alone {
		// Only a message of one URL joins: the run's lane may send it back before it claims, and
		// another URL of a message of several, in a lane of its own, could claim it meanwhile for
		// a delivery that the message sent back does not name (handOnClaim).
		if w.bad == nil && w.u != nil && !w.d.several() {
			if l := runs[hostKey{w.msg.Crawl, w.u.Host}]; l != nil {
				l.ws = append(l.ws, w)
				continue
			}
		}
		out = append(out, []*work{w})
	}
	for _, k := range order {
		l := runs[k]
		for i, w := range l.ws {
			w.lane, w.at = l, i
		}
		out = append(out, l.ws)
	}
	return out
}

// runLanes returns the runs among a batch's lanes.
func runLanes(ls [][]*work) []*runLane {
	var out []*runLane
	for _, l := range ls {
		if l[0].lane != nil {
			out = append(out, l[0].lane)
		}
	}
	return out
}

// isRun reports whether d is a run: several URLs, all of one host (the frontier packs one URL of
// each host into any other message of several).
func isRun(d *delivery) bool {
	if !d.several() {
		return false
	}
	host := ""
	for _, w := range d.work {
		if w.bad != nil {
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

// runFirstWait is the longest a run waits in place for its first slot, besides the SlotLead, when
// the invocation would not live that long anyway: a host booked further ahead has the run wait in
// the queue instead, which costs a few requests where waiting costs the invocation's memory for
// every second (docs/cost.md). When the invocation's runs keep it alive longer anyway (stayWithin),
// the run waits in place as long as that, and an interval more: its host's next free slot comes
// an interval after its last booked one, and a run of a host that the invocation itself booked
// (another run of it taken from the queue meanwhile: topup.go) would otherwise always go back.
const runFirstWait = MaxHeldWait

// stayWithin is how far ahead a run's first slot may start for the run to wait in place for it:
// runFirstWait and the SlotLead from now, or, when the invocation's runs keep it longer
// (lifetime.go), from an interval after the last slot they booked. Waiting so costs nothing the
// invocation is not billed for already; in the queue, the run costs a send, a receive, a delete
// and another claim, and its host sits idle between its booking's end and the run's coming back.
func (h *Handler) stayWithin(ctx context.Context, interval time.Duration) time.Duration {
	within := runFirstWait + h.cfg.SlotLead
	if until := lifetimeOf(ctx).bookedUntil(); !until.IsZero() {
		within += max(until.Add(interval).Sub(h.now()), 0)
	}
	return within
}

// bookRun gives a URL of a run that holds no live slot one, and waits for it: the next of the run's
// slots still ahead, the URLs after it shifting along (shiftRun), or, when none is left, the rest
// of the run's slots booked in one write from the host's next free one (ReserveRun). done: the
// URL needs nothing more here (a duplicate, failed, or the rest of the run goes back to wait for
// its host: its lane's backFrom says so).
func (h *Handler) bookRun(ctx context.Context, a *fetching, l *runLane) (done bool, err error) {
	// The run's claim first, one write for its message's URLs: a copy of the message ends here
	// as a duplicate rather than book the host's slots a second time.
	if dup, err := h.claim(ctx, a.f); dup || err != nil {
		return true, err
	}
	at := a.f.w.at
	rest := l.ws[at:]
	var last time.Time // the slot of the lane's URL before, which made the host's last request here
	if at > 0 {
		last = l.ws[at-1].msg.Slot
	}
	if !shiftRun(rest, h.now(), a.interval, last) {
		horizon, ok := h.runHorizon(ctx)
		if !ok {
			l.due, l.from, l.back = h.now(), at, true // a fresh invocation takes the rest
			return true, nil
		}
		got, err := h.politeness.ReserveRun(ctx, a.u.Host, a.interval, len(rest), h.stayWithin(ctx, a.interval), horizon)
		if err != nil {
			return true, h.fail(ctx, a.f, err)
		}
		if got.N == 0 {
			l.due, l.from, l.back = got.Free, at, true
			return true, nil
		}
		for i, w := range rest {
			w.msg.Slot, w.msg.Gap = time.Time{}, 0
			if i < got.N {
				w.msg.Slot, w.msg.Gap = got.At(i), got.Interval.Milliseconds()
			}
		}
	}
	lifetimeOf(ctx).book(l, lastSlot(rest))
	a.slot = a.f.msg.Slot
	if a.slot.Sub(h.now()) > comeEarly(a.f.msg.Gap) {
		// Booked behind the host's other requests: it waits for its slot without the room of a
		// GET or the host's place in this process (fetchOne took both), which the invocation's
		// other runs of the host need before it, and is worked on again then (fetchAll), its
		// claim made.
		l.waitAt, l.wait = at, true
		return true, nil
	}
	if err := h.awaitSlot(a.fctx, a.slot); err != nil {
		return true, h.fail(ctx, a.f, err)
	}
	return false, nil
}

// shiftRun gives the rest of a run the slots it still holds ahead, in order, from its first URL
// on (those after them hold none, and book when they come to it), and reports whether the first
// got one. A slot is still held while less than half an interval has gone since it started
// (heldSlot). The slots were booked at their gap; when the host's gap is now wider (a slow answer
// throttled it), the run keeps those of its slots that are at least the new gap apart, and after
// last, the host's request before them in this run (zero: unknown, so the slot before the first,
// at its booked gap), rather than drop them all: they are its own, and booking the rest after
// them would leave the host idle for as long as they last.
func shiftRun(rest []*work, now time.Time, interval time.Duration, last time.Time) bool {
	type slot struct {
		at  time.Time
		gap int64
	}
	var ahead []slot
	prev := last
	for _, w := range rest {
		m := w.msg
		if m.Slot.IsZero() || now.Sub(m.Slot) >= interval/2 {
			continue
		}
		booked := time.Duration(m.Gap) * time.Millisecond
		if booked <= 0 {
			booked = interval // booked with no gap said: taken as the host's now
		}
		if prev.IsZero() {
			prev = m.Slot.Add(-booked)
		}
		if m.Slot.Sub(prev) < interval {
			continue // too near the request before it at the host's gap now
		}
		ahead = append(ahead, slot{m.Slot, max(m.Gap, interval.Milliseconds())})
		prev = m.Slot
	}
	for i, w := range rest {
		w.msg.Slot, w.msg.Gap = time.Time{}, 0
		if i < len(ahead) {
			w.msg.Slot, w.msg.Gap = ahead[i].at, ahead[i].gap
		}
	}
	return len(ahead) > 0
}

// lastSlot is the latest slot that rest holds (zero: none).
func lastSlot(rest []*work) time.Time {
	var last time.Time
	for _, w := range rest {
		if w.msg.Slot.After(last) {
			last = w.msg.Slot
		}
	}
	return last
}

// runHorizon is how far ahead a run may book the host's slots: as far as a request could still
// start and be stored in this invocation. ok is false when that is no time at all.
func (h *Handler) runHorizon(ctx context.Context) (time.Duration, bool) {
	dl, ok := ctx.Deadline()
	if !ok {
		return SlotHorizon, true
	}
	left := dl.Add(-storeReserve - minFetchTime).Sub(h.now())
	return left, left > 0
}

// runWaitEarly is how much before a run's next slot its wait in place ends: the URL's checks
// before its request (its crawl, robots.txt, the opt-out list, the host's circuit) run then, and
// the request waits for the slot itself (awaitSlot), so that a slow check on a loaded machine does
// not make it late for its slot (a URL more than half an interval late loses it, and takes the
// run's next slot: shiftRun). keepWaiting keeps a URL this close to its slot.
const runWaitEarly = MaxHeldWait

// awaitRunSlot waits in place, before a run's URL w is worked on, until just before its held
// slot, and reports true, when the invocation leaves time to fetch and store it then; otherwise it
// reports false at once: the rest of the run goes back to the queue to wait there (sendRunBack).
func (h *Handler) awaitRunSlot(ctx context.Context, w *work) bool {
	if w.msg.Slot.IsZero() {
		// It books one as it comes to it (bookRun), when the invocation leaves time to fetch it.
		// Left to its request, a URL with too little time left went back alone (fetchPage's
		// budget), and so did each after it: the realistic crawl's largest host had twenty URLs
		// come back one by one, each booking a slot and going back again to wait for it, and
		// coming back once more in a batch, an invocation and a WARC file of its own.
		_, ok := h.runHorizon(ctx)
		return ok
	}
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

// awaitBehind waits in place for the slot of a run's URL w that its run booked behind the host's
// other requests (bookRun), until comeEarly before it, or until ctx ends: awaitRunSlot then takes
// it to its slot, or sends the rest back.
func (h *Handler) awaitBehind(ctx context.Context, w *work) {
	if wait := w.msg.Slot.Sub(h.now()) - comeEarly(w.msg.Gap); wait > 0 {
		_ = waitFor(ctx, wait) // an ended ctx: awaitRunSlot sends the rest back
	}
}

// comeEarly is how long before its slot a run's URL booked behind the host's other requests
// comes for the host's place in this process (HostConcurrency): half the gap it was booked at
// (gapMs), or runWaitEarly when that is less. The URLs of the invocation's other runs of the host
// take the place up to runWaitEarly before their slots, each as the one before it is done; one
// that came for it as early, behind them all, took it before their last ones, held it past their
// slots, and they booked again behind it.
func comeEarly(gapMs int64) time.Duration {
	early := runWaitEarly
	if gap := time.Duration(gapMs) * time.Millisecond; gap > 0 {
		early = min(early, gap/2)
	}
	return early
}

// sendRunBack sends the rest of a run back to the queue, each message's URLs as one message, due
// at due (less the SlotLead), and reports whether they went. The claim each message took for
// them passes on (message.Fetch.Requeued, as sendBack hands it on): nothing is given back with a
// write. When the rest waits for its host (wait), its URLs hold no slot and count a wait
// (MaxWaits); otherwise (the invocation's time is up) they keep the slots they hold. Unsent, they
// fail, and each is sent back alone (failures).
func (h *Handler) sendRunBack(ctx context.Context, rest []*work, due time.Time, wait bool) bool {
	var entries []queue.Entry
	var ds []*delivery
	byDelivery := map[*delivery][]message.Target{}
	for _, w := range rest {
		t := w.msg.Target
		if wait {
			t.Slot, t.Gap = time.Time{}, 0
			t.Waits++
		}
		if byDelivery[w.d] == nil {
			ds = append(ds, w.d)
		}
		byDelivery[w.d] = append(byDelivery[w.d], t)
	}
	var delay time.Duration // due zero: now (a zero time's distance from now overflows a Duration)
	if !due.IsZero() {
		delay = min(max(due.Sub(h.now())-h.cfg.SlotLead, 0).Truncate(time.Second), queue.MaxDelay)
	}
	for i, d := range ds {
		m := message.Pack(d.msg.Crawl, byDelivery[d])
		d.handOnClaim(m)
		body, err := message.Encode(m)
		if err != nil {
			h.log.Warn("encode the rest of a run; its URLs are sent back alone", "messageId", d.rec.MessageId, "err", err.Error())
			return false
		}
		entries = append(entries, queue.Entry{ID: strconv.Itoa(i), Body: body, Delay: delay})
	}
	if err := h.send.SendBatch(ctx, h.cfg.FetchQueue, entries); err != nil {
		h.log.Warn("send the rest of a run back; its URLs are sent back alone", "messages", len(entries),
			"urls", len(rest), "err", err.Error())
		return false
	}
	h.log.Debug("the rest of a run went back to the queue", "messages", len(entries), "urls", len(rest), "delay", delay)
	return true
}

// lanesOrder puts the longest lanes first, so that a batch's runs start before its single URLs
// take the workers.
func lanesOrder(ls [][]*work) {
	slices.SortStableFunc(ls, func(a, b []*work) int { return cmp.Compare(len(b), len(a)) })
}
