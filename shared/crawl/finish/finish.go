// Package finish announces a crawl's end, once: a "Crawl Finished" event with its counts and
// cost, put on EventBridge's default bus by the stack (package eventbus) and written beside the
// crawl's seed report by `crawl run`.
//
// When a crawl has drained is not something one handler can see: the last URL ends before its
// page is parsed and its links are admitted, and the queues are shared by every crawl. So a crawl
// has a chain of drain checks, messages on the schedule queue (message.Check), one every Every:
// Begin sends the first when the crawl starts, and each check that finds work left sends the next.
// A check finds the crawl drained when
//
//  1. it is not paused;
//  2. an exact tally of its items (crawlstate.Drained) finds no URL left to end, no fetched page
//     left to parse, and no Links message left to admit: every Links message sent is named, by
//     the parse mark of the message that sent it or by a note of schedule's (a seed file's) or
//     the CLI's, and schedule marks each admitted once its URLs are admitted or refused and their
//     fetch messages sent. A Links message that failed, however often, is still named and not
//     admitted, and keeps the crawl from its end: one in the schedule queue's dead-letter queue
//     keeps it until it is moved back (DESIGN invariant 11).
//
// The tally scans the table, so a check tallies only when its counters of URLs (admitted, ended
// by state and class, parse errors) have not changed for Quiet, and have changed since its last
// tally or another Quiet has passed: once at the end of a crawl, and once a Quiet while it stalls.
// Quiet only spaces the tallies out, for their cost; it is not what waits for the Links messages.
// Parse marks written before marks named their Links messages name none: for those (a crawl that
// ran across the change), the quiet time is the only wait, as it was before, which covers one
// failed delivery of a Links message when Quiet is longer than the schedule queue's visibility
// timeout (docs/operating.md).
//
// Exactly once: the crawl item holds the chain's seq and the end (crawlstate.StepCheck). A check
// whose seq the chain has passed (a duplicate delivery) does nothing. The end is decided by one
// conditional write that stores the event with it (pending), then the event is put, then the end
// is marked announced. A check that dies after the decision is delivered again and puts the same
// stored event. EventBridge has no deduplication, so a check that dies after the put and before
// the mark puts the event a second time: the event is sent at least once and decided exactly once,
// and every copy carries the same EventID for a consumer to key on. A copy of the deciding check
// (or the deciding check moved back from its dead-letter queue, under a new id) announces a pending
// end only once it has been pending for Quiet, after taking it over with a conditional write.
package finish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/cost"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/port/queue"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// Publisher puts a crawl's end event where its users look for it. A Publisher returns nil only
// once the event is stored or accepted; an error leaves the end pending, to be put again.
type Publisher interface {
	Publish(ctx context.Context, e Event) error
}

// State is what the checks need of the crawl state (crawlstate.Store).
type State interface {
	ChecksOf(ctx context.Context, crawl string) (crawlstate.Checks, error)
	StepCheck(ctx context.Context, crawl string, st crawlstate.Step) (crawlstate.Checks, error)
	DecideEnd(ctx context.Context, crawl, by, event string) (crawlstate.Checks, error)
	TakeEnd(ctx context.Context, crawl, from, to string) error
	MarkAnnounced(ctx context.Context, crawl string) error
	Counters(ctx context.Context, crawl string) (crawlstate.Counters, error)
	Drained(ctx context.Context, crawl string) (crawlstate.Counters, crawlstate.Left, error)
}

var _ State = (*crawlstate.Store)(nil)

// Defaults of the stack's checks.
const (
	DefaultEvery = time.Minute
	DefaultQuiet = 10 * time.Minute
)

// Checker runs a crawl's drain checks and announces its end.
type Checker struct {
	State State
	Pub   Publisher
	Send  queue.Sender
	// Queue is where the checks go (the schedule queue).
	Queue string
	// Every is the time between two checks (at most queue.MaxDelay); Quiet how long the crawl's
	// counters must not change before its items are tallied (a bound on the tallies' cost).
	Every, Quiet time.Duration
	// Prices cost the crawl's ledger in the event.
	Prices cost.Prices
	Log    *slog.Logger
	// Now is the clock; tests replace it.
	Now func() time.Time
}

func (c *Checker) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Checker) log() *slog.Logger {
	if c.Log != nil {
		return c.Log
	}
	return slog.Default()
}

// Begin sends the crawl's first check. A crawl started again (a redelivered seed notification)
// sends another, which the chain drops as a copy once it has moved on.
func (c *Checker) Begin(ctx context.Context, crawl string) error {
	return c.send(ctx, crawl, 0)
}

func (c *Checker) send(ctx context.Context, crawl string, seq int) error {
	body, err := message.Encode(message.Check{Header: message.Header{Crawl: crawl}, Seq: seq})
	if err != nil {
		return err
	}
	wait := min(max(c.Every, time.Millisecond), queue.MaxDelay)
	if err := c.Send.SendBatch(ctx, c.Queue, []queue.Entry{{ID: "check", Body: body, Delay: wait}}); err != nil {
		return fmt.Errorf("send check %d of crawl %s: %w", seq, crawl, err)
	}
	return nil
}

// Check runs the check m, delivered as message id: it announces the crawl's end when the crawl
// has drained, and otherwise sends the next check. An error leaves the check to be delivered
// again; a copy of a check the chain has passed does nothing.
func (c *Checker) Check(ctx context.Context, m *message.Check, id string) error {
	ch, err := c.State.ChecksOf(ctx, m.Crawl)
	if errors.Is(err, table.ErrNotFound) {
		c.log().Warn("a check of a crawl with no record: dropped", "crawl", m.Crawl, "seq", m.Seq)
		return nil
	}
	if err != nil {
		return err
	}
	mine := ch.Seq == m.Seq+1 && ch.By == id // this check's own earlier delivery stepped already
	switch {
	case ch.End == crawlstate.EndAnnounced:
		return nil
	case ch.End == crawlstate.EndPending && ch.EndBy == id:
		return c.announce(ctx, m.Crawl, ch.Event) // it died after deciding: put the stored event
	case ch.End == crawlstate.EndPending && ch.Seq == m.Seq+1:
		return c.takeOver(ctx, ch, m, id)
	case ch.End != "" || (ch.Seq != m.Seq && !mine):
		c.log().Debug("a copy of a check the chain has passed", "crawl", m.Crawl, "seq", m.Seq, "chain", ch.Seq)
		return nil
	}
	st, ev, err := c.look(ctx, ch, m, id)
	if err != nil {
		return err
	}
	if _, err := c.State.StepCheck(ctx, m.Crawl, st); errors.Is(err, crawlstate.ErrStale) {
		return nil // another copy of this check stepped first
	} else if err != nil {
		return err
	}
	if st.Event == "" {
		return c.send(ctx, m.Crawl, m.Seq+1)
	}
	c.log().Info("crawl drained", "crawl", m.Crawl, "end", ev.End, "fetched", ev.Counts.Fetched, "costUsd", ev.CostUSD)
	return c.announce(ctx, m.Crawl, st.Event)
}

// ErrEndPending is a check's answer while another check announces the crawl's end: it is
// delivered again, after the queue's visibility timeout, and takes the end over if it is still
// pending a Quiet after its decision.
var ErrEndPending = errors.New("the crawl's end is being announced by another check")

// takeOver is the check m, delivered as id, of a crawl whose end another check decided: a copy of
// the deciding check, or the deciding check moved back from the dead-letter queue under a new id.
// Once the end has been pending for Quiet (longer than the queue's visibility timeout: its decider
// has had its deliveries), the check takes the end over and announces it; before, it fails, to come
// again. It re-sends nothing: a copy of a copy would multiply.
func (c *Checker) takeOver(ctx context.Context, ch crawlstate.Checks, m *message.Check, id string) error {
	if c.now().Sub(ch.EndAt) < c.Quiet {
		return fmt.Errorf("check %d of crawl %s: %w", m.Seq, m.Crawl, ErrEndPending)
	}
	if err := c.State.TakeEnd(ctx, m.Crawl, ch.EndBy, id); errors.Is(err, crawlstate.ErrStale) {
		return nil // announced meanwhile, or taken by another copy
	} else if err != nil {
		return err
	}
	c.log().Warn("took over the end of a crawl left pending", "crawl", m.Crawl, "decidedBy", ch.EndBy, "since", ch.EndAt)
	return c.announce(ctx, m.Crawl, ch.Event)
}

// look is what the check m of crawl ch finds: the step to record, and the event when the crawl
// has drained.
func (c *Checker) look(ctx context.Context, ch crawlstate.Checks, m *message.Check, id string) (crawlstate.Step, Event, error) {
	now := c.now()
	st := crawlstate.Step{Seq: m.Seq, By: id}
	counters, err := c.State.Counters(ctx, m.Crawl)
	if err != nil {
		return st, Event{}, err
	}
	st.QuietFP, st.QuietSince = fingerprint(counters), ch.QuietSince
	if st.QuietFP != ch.QuietFP || ch.QuietSince.IsZero() {
		st.QuietSince = now
	}
	quiet := now.Sub(st.QuietSince) >= c.Quiet
	// A tally that found work left is done again once the counters have moved, or after another
	// quiet time (a parse that ended without a counter to move, say).
	talliedAlready := ch.Tallied && ch.TallyFP == st.QuietFP && now.Sub(ch.TallyAt) < c.Quiet
	if ch.Run == crawlstate.Paused || !quiet || talliedAlready {
		return st, Event{}, nil
	}
	exact, left, err := c.State.Drained(ctx, m.Crawl)
	if err != nil {
		return st, Event{}, err
	}
	st.Tallied = true
	if !left.Done() {
		c.log().Info("crawl quiet, not drained", "crawl", m.Crawl, "queued", left.Queued, "unparsed", left.Unparsed, "links", left.Links)
		return st, Event{}, nil
	}
	ev := eventOf(ch, exact, now, c.Prices)
	b, err := json.Marshal(ev)
	if err != nil {
		return st, Event{}, fmt.Errorf("encode the end of crawl %s: %w", m.Crawl, err)
	}
	st.Event = string(b)
	return st, ev, nil
}

// announce puts the stored event, then marks it announced.
func (c *Checker) announce(ctx context.Context, crawl, stored string) error {
	var ev Event
	if err := json.Unmarshal([]byte(stored), &ev); err != nil {
		return fmt.Errorf("the stored end of crawl %s: %w", crawl, err)
	}
	if err := c.Pub.Publish(ctx, ev); err != nil {
		return fmt.Errorf("announce the end of crawl %s: %w", crawl, err)
	}
	return c.State.MarkAnnounced(ctx, crawl)
}

// End announces the end of a crawl that the caller knows has drained (`crawl run`, whose queues
// ran out), as by: it decides the end with exact, the crawl's exact tally (crawlstate.Tally) since
// it drained, unless the end is decided already; puts the decided event unless it was announced
// already; and returns it, with whether this call put it. The caller has the tally from its
// summary: a second scan of the crawl's items would double the time and memory its end takes.
func (c *Checker) End(ctx context.Context, crawl, by string, exact crawlstate.Counters) (Event, bool, error) {
	ch, err := c.State.ChecksOf(ctx, crawl)
	if err != nil {
		return Event{}, false, err
	}
	if ch.End == "" {
		b, err := json.Marshal(eventOf(ch, exact, c.now(), c.Prices))
		if err != nil {
			return Event{}, false, fmt.Errorf("encode the end of crawl %s: %w", crawl, err)
		}
		if ch, err = c.State.DecideEnd(ctx, crawl, by, string(b)); err != nil {
			return Event{}, false, err
		}
	}
	var ev Event
	if err := json.Unmarshal([]byte(ch.Event), &ev); err != nil {
		return Event{}, false, fmt.Errorf("the stored end of crawl %s: %w", crawl, err)
	}
	if ch.End == crawlstate.EndAnnounced {
		return ev, false, nil
	}
	if err := c.announce(ctx, crawl, ch.Event); err != nil {
		return ev, false, err
	}
	return ev, true, nil
}
