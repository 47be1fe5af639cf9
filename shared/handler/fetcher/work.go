package fetcher

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/handler/sqsbatch"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// A batch's work. Each SQS message is decoded once, into the URLs it carries (message.Fetch.URLs:
// the frontier packs the URLs of one group that come due within a second), and each URL is
// claimed, fetched, stored and recorded as if its message came alone. A message's URLs are
// claimed together under its id (claims.go).
//
// A message fails by its own id. A message of one URL fails when its URL must be tried again. A
// URL of a message of several that must be tried again goes back to the queue alone, in a message
// of its own that carries the claim's owner (message.Target.Prev), so that its claim passes to the
// new message, and the message of several is acknowledged: its other URLs are done, or waiting in
// messages of their own, and a redelivery would only send those again. Only if that send fails
// does the message fail, to be delivered again whole (its done URLs are then found done in their
// group).
//
// SQS may deliver one message twice in one batch: it is worked on once.

// sendBackDelay is how long a URL that failed in a message of several waits before its own
// message is delivered: about what a failed message waits for its visibility timeout, at least.
const sendBackDelay = time.Second

// delivery is one SQS message of the batch, decoded once.
type delivery struct {
	rec events.SQSMessage
	msg *message.Fetch // nil when the body does not decode
	// work is the message's URLs, one each; a body that does not decode is one piece of work, to
	// be quarantined.
	work []*work
	// held: the message went back to the queue whole, to wait for its paused crawl (runstate.go).
	held bool
	// claim is what this delivery did of its URLs' claim (one write for them all: claims.go):
	// claimNone, claimTried (sent, its answer not known to be a success) or claimHeld. Its URLs
	// run one after another in a run's lane, or at once in a message of several.
	claim atomic.Int32
}

// What a delivery did of its URLs' claim (delivery.claim).
const (
	claimNone int32 = iota
	claimTried
	claimHeld
)

// handOnClaim passes the delivery's claim on to m, the rest of its URLs sent back to the queue:
// held, m's URLs name this delivery as their claim's holder alone; otherwise they name the
// deliveries of the message that may hold it, this one only if it tried. A delivery that never
// tried must not join the list (message.MaxPrev bounds it): a run sent back by its lane again and
// again without claiming pushed its claim's holder out, and its URLs were then taken for another
// message's and dropped (the single-host crawl of make cost lost 10 and 20 URLs in two runs).
func (d *delivery) handOnClaim(m *message.Fetch) {
	receives := sqsbatch.ReceiveCount(d.rec)
	switch d.claim.Load() {
	case claimHeld:
		m.Requeued(ownerOf(d.rec.MessageId, receives), true)
	case claimTried:
		handOn(m, d.rec.MessageId, receives)
	default:
		handOn(m, d.rec.MessageId, receives-1) // its earlier deliveries may have claimed
	}
}

// several reports whether the message carries several URLs.
func (d *delivery) several() bool { return len(d.work) > 1 }

// work is one URL of a delivery.
type work struct {
	d   *delivery
	n   int            // its place in the batch's work
	msg *message.Fetch // its URL, as a message of one (message.Fetch.Split)
	// u is the URL normalised, key its table key and group where it is claimed and recorded (its
	// own key when admitted alone); bad says why the body or the URL is poison.
	u          *url.URL
	key, group string
	bad        error
	// lane is the run the work is a URL of (runs.go), at its place at; nil for a URL worked on alone.
	lane *runLane
	at   int
	// claimed is set once the URL's claim holds, with its state before it (before), for a URL
	// worked on again in the batch (a run's URL that waited behind its host's other requests).
	claimed bool
	before  crawlstate.State
}

// owner is the claim's owner of the work's URL: its message's delivery (ownerOf).
func (w *work) owner() string { return ownerOf(w.d.rec.MessageId, w.receives()) }

// prev lists the owners whose claims on the work's URL pass to it: its message's earlier
// deliveries, the latest first, then the owners its message names (message.Target.Prev). None is
// left out: an owner left out that still held the claim would have the message end as a
// duplicate, and the URL stay claimed with no message to fetch it. The list is at most
// MaxPrev and maxReceiveCount-1 long, each owner a condition of the claim's write per URL, far
// below DynamoDB's 4 KB for a condition.
func (w *work) prev() []string {
	var out []string
	for r := w.receives() - 1; r >= 1; r-- {
		out = append(out, ownerOf(w.d.rec.MessageId, r))
	}
	return append(out, w.msg.Prev...)
}

// ownerOf names the owner of the claims that a message's receives-th delivery makes: the
// message's id on its first delivery, and id#n on a later one. A claim handed on to a re-queued
// message (message.Target.Prev) then passes from the delivery that handed it on, and only while
// that delivery's claim stands: a later delivery of the same message, after an invocation that
// died between the re-queue and its end (a timeout, an OOM), claims the URL under a name of its
// own, and the re-queued message that comes in while it fetches finds the URL held by another
// instead of taking the claim over and fetching it too.
func ownerOf(id string, receives int) string {
	if receives <= 1 {
		return id
	}
	return id + "#" + strconv.Itoa(receives)
}

// handOn marks m as re-queued by the deliveries of the message id up to its upTo-th, each of
// which may hold the claims of m's URLs (message.Fetch.Requeued).
func handOn(m *message.Fetch, id string, upTo int) {
	for r := 1; r <= upTo; r++ {
		m.Requeued(ownerOf(id, r), false)
	}
}

// receives is the receive count of the work's message.
func (w *work) receives() int { return sqsbatch.ReceiveCount(w.d.rec) }

// decode decodes each message of the batch once; a second copy of a message is dropped, and so is
// a message sent twice (another id, the same body) on its first delivery: it has claimed
// nothing, and the copy kept does all it would. Two copies of a run worked on as one lane would
// otherwise go back to the queue together, the second never claiming, and double with every
// doubled send (runs.go, sendRunBack).
func (h *Handler) decode(ev events.SQSEvent) []*delivery {
	seen := make(map[string]bool, len(ev.Records))
	bodies := make(map[string]bool, len(ev.Records))
	ds := make([]*delivery, 0, len(ev.Records))
	for _, rec := range ev.Records {
		if seen[rec.MessageId] {
			h.log.Debug("a message delivered twice in one batch is worked on once", "messageId", rec.MessageId)
			continue
		}
		seen[rec.MessageId] = true
		if bodies[rec.Body] && sqsbatch.ReceiveCount(rec) <= 1 {
			h.log.Debug("a message sent twice is worked on once in a batch", "messageId", rec.MessageId)
			continue
		}
		bodies[rec.Body] = true
		d := &delivery{rec: rec}
		m, err := message.DecodeFetch(rec.Body)
		if err != nil {
			d.work = []*work{{d: d, bad: err}}
		} else {
			d.msg = m
		}
		ds = append(ds, d)
	}
	return ds
}

// workOf returns the work of the deliveries not held, numbered in order.
func workOf(ds []*delivery) []*work {
	var all []*work
	for _, d := range ds {
		if d.held {
			continue
		}
		if d.msg != nil {
			d.work = onePoison(onceEach(d, d.msg.Split()))
		}
		for _, w := range d.work {
			w.n = len(all)
			all = append(all, w)
		}
	}
	return all
}

// onceEach returns the work of d's URLs, one piece for each: a URL the message names twice is
// worked on once, so that it is fetched once and its group's record names it once.
func onceEach(d *delivery, urls []*message.Fetch) []*work {
	seen := make(map[string]bool, len(urls))
	ws := make([]*work, 0, len(urls))
	for _, one := range urls {
		w := newWork(d, one)
		if w.bad == nil {
			if seen[w.key] {
				continue
			}
			seen[w.key] = true
		}
		ws = append(ws, w)
	}
	return ws
}

// onePoison leaves one piece of poison among a message's work, whose reason names every bad URL:
// the message is quarantined once, under its id, with all its reasons.
func onePoison(ws []*work) []*work {
	var first *work
	var reasons []error
	out := ws[:0]
	for _, w := range ws {
		if w.bad == nil {
			out = append(out, w)
			continue
		}
		if inner := errors.Unwrap(w.bad); inner != nil {
			reasons = append(reasons, inner) // the class once, on the joined error
		} else {
			reasons = append(reasons, w.bad)
		}
		if first == nil {
			first = w
			out = append(out, w)
		}
	}
	if len(reasons) > 1 {
		first.bad = errclass.New(errclass.Poison, errors.Join(reasons...))
	}
	return out
}

// newWork returns the work of one URL of d.
func newWork(d *delivery, m *message.Fetch) *work {
	w := &work{d: d, msg: m, group: m.Group}
	u, err := urlnorm.Normalize(m.URL)
	if err != nil {
		w.bad = errclass.Errorf(errclass.Poison, "fetch message url %q: %v", m.URL, err)
		return w
	}
	w.u, w.key = u, urlnorm.Key(u.String())
	if w.group == "" {
		w.group = w.key // admitted as a group of its own
	}
	return w
}

// fetchAll runs each piece of work, Concurrency at once (a run's one after another, runs.go), and
// stores the fetched pages: at the end,
// or earlier in parts when they fill the memory budget (kept.go). It returns which pieces failed.
func (h *Handler) fetchAll(ctx context.Context, all []*work) (failed []bool) {
	failed = make([]bool, len(all))
	ctx, k := withKept(ctx, h)
	ls := lanes(all)
	lanesOrder(ls)
	ctx = withLifetime(ctx, runLanes(ls), h.cfg.Concurrency)
	lt := lifetimeOf(ctx)
	_ = sqsbatch.Each(len(ls), h.cfg.Concurrency, strconv.Itoa, func(i int) error {
		lane := ls[i]
		defer lt.book(lane[0].lane, time.Time{}) // a run that ended before it booked
		for j := 0; j < len(lane); j++ {
			w := lane[j]
			if w.lane != nil && !h.awaitRunSlot(ctx, w) { // a run's URL (runs.go)
				back := h.sendRunBack(ctx, lane[j:], lane[j].msg.Slot, false)
				for _, rest := range lane[j:] {
					failed[rest.n] = !back
				}
				break
			}
			f, err := h.runOne(ctx, w)
			if err == nil && f != nil {
				k.add(*f)
			}
			failed[w.n] = err != nil // each piece of work is one lane's, written by it alone
			// The host is booked further ahead than the run waits in place: the rest waits in the queue.
			if due, ok := w.lane.backFrom(j); ok {
				back := h.sendRunBack(ctx, lane[j:], due, true)
				for _, rest := range lane[j:] {
					failed[rest.n] = !back
				}
				break
			}
			if w.lane.waitsAt(j) {
				h.awaitBehind(ctx, w) // booked behind other runs of its host: worked on again near its slot
				j--
			}
		}
		return nil
	})
	k.store(true)
	for n := range k.failed {
		failed[n] = true
	}
	return failed
}

// runOne works on one URL as sqsbatch.Runner works on a record (Runner.One): in a span of its own,
// a panic failing only it, and poison quarantined with its message and acknowledged. A nil error
// means the URL needs nothing more of this delivery.
func (h *Handler) runOne(ctx context.Context, w *work) (*fetched, error) {
	var f *fetched
	var err error
	if h.batch.One(ctx, w.d.rec, func(ctx context.Context, _ events.SQSMessage) error {
		f, err = h.fetchOne(ctx, w)
		return err
	}) {
		return f, nil // fetched, done, or quarantined
	}
	if err == nil {
		err = errors.New("fetch panicked") // One logged the panic
	}
	return nil, err
}

// failures returns the messages that must be delivered again, given the work that failed: a
// message of one URL whose URL failed, and a message of several whose failed URLs could not be
// sent back alone.
func (h *Handler) failures(ctx context.Context, ds []*delivery, failed []bool) []events.SQSBatchItemFailure {
	var out []events.SQSBatchItemFailure
	for _, d := range ds {
		var again []*work
		for _, w := range d.work {
			if failed[w.n] {
				again = append(again, w)
			}
		}
		if len(again) == 0 {
			continue
		}
		if !d.several() || !h.sendBack(ctx, d, again) {
			out = append(out, events.SQSBatchItemFailure{ItemIdentifier: d.rec.MessageId})
		}
	}
	return out
}

// sendBack sends the failed URLs of a message of several back alone, each carrying the message's
// claim (message.Fetch.Requeued), and reports whether they went.
func (h *Handler) sendBack(ctx context.Context, d *delivery, again []*work) bool {
	entries := make([]queue.Entry, len(again))
	for i, w := range again {
		one := *w.msg
		handOn(&one, d.rec.MessageId, w.receives())
		body, err := message.Encode(&one)
		if err != nil {
			h.log.Warn("encode a failed URL to send back alone; the whole message is delivered again",
				"messageId", d.rec.MessageId, "err", err.Error())
			return false
		}
		entries[i] = queue.Entry{ID: strconv.Itoa(i), Body: body, Delay: sendBackDelay}
	}
	if err := h.send.SendBatch(ctx, h.cfg.FetchQueue, entries); err != nil {
		h.log.Warn("send failed URLs back alone; the whole message is delivered again", "messageId", d.rec.MessageId,
			"urls", len(again), "err", err.Error())
		return false
	}
	return true
}
