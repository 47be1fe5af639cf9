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
	"github.com/crawlstack/crawlstack/shared/observe/metrics"
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
	MarkStallAnnounced(ctx context.Context, crawl string) error
	ExpireCounters(ctx context.Context, crawl string, at time.Time) error
	Retention() time.Duration
	Counters(ctx context.Context, crawl string) (crawlstate.Counters, error)
	DrainedStep(ctx context.Context, crawl string, basis int64, budget time.Duration) (crawlstate.TallyStep, error)
	DropTally(ctx context.Context, crawl string) error
	Renew(ctx context.Context, crawl string, budget time.Duration) (bool, error)
}

var _ State = (*crawlstate.Store)(nil)

// Defaults of the stack's checks. DefaultStallAfter is an hour of checks (60 at DefaultEvery) that
// find the crawl's counters unchanged and work left.
const (
	DefaultEvery      = time.Minute
	DefaultQuiet      = 10 * time.Minute
	DefaultStallAfter = time.Hour
)

// Checker runs a crawl's drain checks and announces its end.
type Checker struct {
	State State
	Pub   Publisher
	Send  queue.Sender
	// Queue is where the checks go (the schedule queue).
	Queue string
	// Every is the time between two checks (at most queue.MaxDelay); Quiet how long the crawl's
	// counters must not change before its items are tallied again, or tallied at all for a crawl
	// with no end's counters (a bound on the tallies' cost); StallAfter how long they must not
	// change, with work left, before the crawl is announced stalled (0: DefaultStallAfter).
	Every, Quiet, StallAfter time.Duration
	// TallyBudget is how long one check spends at most on a step of the crawl's exact tally
	// (0: DefaultTallyBudget).
	TallyBudget time.Duration
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

func (c *Checker) stallAfter() time.Duration {
	if c.StallAfter > 0 {
		return c.StallAfter
	}
	return DefaultStallAfter
}

// every is the time between two checks of a running crawl.
func (c *Checker) every() time.Duration { return min(max(c.Every, time.Millisecond), queue.MaxDelay) }

// Begin sends the crawl's first check. A crawl started again (a redelivered seed notification)
// sends another, which the chain drops as a copy once it has moved on; a crawl that stalled gets a
// check that takes its chain on (Resume).
func (c *Checker) Begin(ctx context.Context, crawl string) error {
	ch, err := c.State.ChecksOf(ctx, crawl)
	if err == nil && ch.Stall != "" && ch.End == "" {
		return c.send(ctx, crawl, ch.Seq, c.every())
	}
	if err != nil && !errors.Is(err, table.ErrNotFound) {
		return err
	}
	return c.send(ctx, crawl, 0, c.every())
}

// Resume sends a check that takes the crawl's chain on at its seq, at the pace of a running crawl:
// for a crawl resumed after a pause (whose chain waits longer and longer), or a stalled crawl whose
// work was moved back from a dead-letter queue (whose chain stopped). It reports whether it sent
// one: none for a crawl whose end is decided, or one with no chain (its seeds were never read by
// the stack). The chain's own check, if one is on its way, arrives as a copy and is dropped.
func (c *Checker) Resume(ctx context.Context, crawl string) (bool, error) {
	ch, err := c.State.ChecksOf(ctx, crawl)
	if err != nil {
		return false, err
	}
	if ch.End != "" || (ch.Seq == 0 && ch.By == "") {
		return false, nil
	}
	return true, c.send(ctx, crawl, ch.Seq, c.every())
}

// nextWait is the delay of the check after m: Every, or twice m's for a paused crawl, up to
// queue.MaxDelay: a crawl paused for a day costs some 100 checks, not 1,440.
func (c *Checker) nextWait(ch crawlstate.Checks, m *message.Check) time.Duration {
	if ch.Run != crawlstate.Paused {
		return c.every()
	}
	last := max(time.Duration(m.WaitMs)*time.Millisecond, c.every())
	return min(2*last, queue.MaxDelay)
}

func (c *Checker) send(ctx context.Context, crawl string, seq int, wait time.Duration) error {
	body, err := message.Encode(message.Check{Header: message.Header{Crawl: crawl}, Seq: seq, WaitMs: wait.Milliseconds()})
	if err != nil {
		return err
	}
	if err := c.Send.SendBatch(ctx, c.Queue, []queue.Entry{{ID: "check", Body: body, Delay: wait}}); err != nil {
		return fmt.Errorf("send check %d of crawl %s: %w", seq, crawl, err)
	}
	return nil
}

// Check runs the check m, delivered as message id: it announces the crawl's end when the crawl
// has drained, its stall when its work stopped moving, and otherwise sends the next check. An
// error leaves the check to be delivered again; a copy of a check the chain has passed does
// nothing.
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
	case mine && ch.Stall == crawlstate.StallPending:
		return c.announceStall(ctx, m.Crawl, ch.StallEvent) // it died after deciding the stall
	case mine && ch.Stall != "":
		return nil // it stalled the crawl, and announced it: the chain stops here
	}
	c.renew(ctx, m.Crawl)
	st, ev, err := c.look(ctx, ch, m, id)
	if err != nil {
		return err
	}
	_, err = c.State.StepCheck(ctx, m.Crawl, st)
	if errors.Is(err, crawlstate.ErrExtended) {
		// New seeds joined the crawl since this check read it: its tally may have missed them.
		c.log().Info("crawl extended by its seed file during the check: the checks go on", "crawl", m.Crawl, "seq", m.Seq)
		st.Event, st.Tallied, st.Drift = "", false, false
		_, err = c.State.StepCheck(ctx, m.Crawl, st)
	}
	if errors.Is(err, crawlstate.ErrStale) {
		return nil // another copy of this check stepped first
	} else if err != nil {
		return err
	}
	switch {
	case st.Stall != "":
		c.log().Warn("crawl stalled: its checks stop", "crawl", m.Crawl, "queued", ev.Stuck.QueuedURLs,
			"unparsed", ev.Stuck.UnparsedPages, "links", ev.Stuck.UnadmittedLinks, "quietSince", ev.Stuck.QuietSince,
			"deadLetterQueues", ev.Stuck.DeadLetterQueues)
		metrics.Stalled(ctx)
		return c.announceStall(ctx, m.Crawl, st.Stall)
	case st.Event != "":
		c.log().Info("crawl drained", "crawl", m.Crawl, "end", ev.End, "fetched", ev.Counts.Fetched, "costUsd", ev.CostUSD)
		return c.announce(ctx, m.Crawl, st.Event)
	}
	return c.send(ctx, m.Crawl, m.Seq+1, c.nextWait(ch, m))
}

// RenewBudget is how long one check spends at most renewing the crawl's items, a third of the
// schedule function's timeout: a renewal of a large crawl takes several checks.
const RenewBudget = 20 * time.Second

// DefaultTallyBudget is how long one check spends at most on a step of the crawl's exact tally,
// another third of the schedule function's 60 s: with RenewBudget, 40 s, and the last third for
// what a step overruns its budget by (a partition's page being read), saving the tally (a few
// seconds for a crawl of a million URLs: docs/bench.md), the counters and the step of the chain.
const DefaultTallyBudget = 20 * time.Second

func (c *Checker) tallyBudget() time.Duration {
	if c.TallyBudget > 0 {
		return c.TallyBudget
	}
	return DefaultTallyBudget
}

// renew renews the crawl's items when they are due (crawlstate.Runs.Renew: a crawl runs for as
// long as it needs, its items never expiring under it), while its chain of checks runs, paused or
// not. A renewal that fails is taken up again by the next check; the check goes on.
func (c *Checker) renew(ctx context.Context, crawl string) {
	if _, err := c.State.Renew(ctx, crawl, RenewBudget); err != nil {
		c.log().Warn("renewing the crawl's items failed: the next check goes on with it", "crawl", crawl, "err", err)
	}
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
// has drained (Step.Event) or stalled (Step.Stall).
func (c *Checker) look(ctx context.Context, ch crawlstate.Checks, m *message.Check, id string) (crawlstate.Step, Event, error) {
	now := c.now()
	st := crawlstate.Step{Seq: m.Seq, By: id, Extended: ch.Extended} // read before the counters
	counters, err := c.State.Counters(ctx, m.Crawl)
	if err != nil {
		return st, Event{}, err
	}
	st.QuietFP, st.QuietSince = fingerprint(counters), ch.QuietSince
	if st.QuietFP != ch.QuietFP || ch.QuietSince.IsZero() || ch.Run == crawlstate.Paused {
		st.QuietSince = now // a paused crawl's work waits: it is not stalled, and is quiet from its resume
	}
	// A tally that found work left is done again once the counters have moved, or after another
	// quiet time (a parse that ended without a counter to move, say).
	talliedAlready := ch.Tallied && ch.TallyFP == st.QuietFP && now.Sub(ch.TallyAt) < c.Quiet
	if ch.Run == crawlstate.Paused || talliedAlready {
		return st, Event{}, c.dropTally(ctx, ch)
	}
	if !ch.Counted {
		return c.lookByTally(ctx, ch, st, now)
	}
	left := counters.Left()
	still := now.Sub(st.QuietSince)
	stalled := still >= c.stallAfter()
	if !left.Done() && still < c.Quiet {
		// the counters show work left, and it moves (or has not been still for long)
		return st, Event{}, c.dropTally(ctx, ch)
	}
	// The counters show nothing left, or have been still with work left for Quiet (counters that
	// drifted high would otherwise hold the end for ever: the deployed stack's showed a Links
	// message named and never counted admitted), or for StallAfter: the exact tally decides, once
	// it completes.
	exact, tallied, done, err := c.tallyStep(ctx, m.Crawl, st.QuietFP)
	if err != nil || !done {
		return st, Event{}, err
	}
	st.Tallied = true
	switch {
	case tallied.Done() && !left.Done() && !stalled && !(ch.Drift && ch.TallyFP == st.QuietFP):
		// The tally is no snapshot: a Links message admitted while it read can show its admitted
		// mark and none of its URL items, whose counts are written at its batch's end. Counters
		// that drifted high are told from that by a second tally a Quiet later, the counters
		// unchanged between the two (an admission moves them).
		st.Drift = true
		c.log().Info("crawl drained by its tally while its counters show work left: a tally a quiet time later confirms it",
			"crawl", m.Crawl, "countersQueued", left.Queued, "countersUnparsed", left.Unparsed, "countersLinks", left.Links)
		return st, Event{}, nil
	case tallied.Done():
		if !left.Done() {
			c.log().Warn("crawl drained while its counters show work left: they drifted", "crawl", m.Crawl,
				"countersQueued", left.Queued, "countersUnparsed", left.Unparsed, "countersLinks", left.Links)
		}
		return c.ended(ctx, ch, st, exact, now)
	case !stalled:
		if left.Done() {
			c.log().Warn("the crawl's counters show nothing left and its tally disagrees: checks go on", "crawl", m.Crawl,
				"countersQueued", left.Queued, "countersUnparsed", left.Unparsed, "countersLinks", left.Links,
				"tallyQueued", tallied.Queued, "tallyUnparsed", tallied.Unparsed, "tallyLinks", tallied.Links)
		}
		return st, Event{}, nil
	}
	// The counters stood still for StallAfter, and the tally finds work left: it is stuck.
	ev := stallEventOf(ch, m.Seq, exact, tallied, true, st.QuietSince, now, c.Prices)
	b, err := json.Marshal(ev)
	if err != nil {
		return st, Event{}, fmt.Errorf("encode the stall of crawl %s: %w", m.Crawl, err)
	}
	st.Stall = string(b)
	return st, ev, nil
}

// lookByTally is look for a crawl started before the end's counters were counted: it tallies once
// its counters of URLs have been quiet for Quiet, and never stalls.
func (c *Checker) lookByTally(ctx context.Context, ch crawlstate.Checks, st crawlstate.Step, now time.Time) (crawlstate.Step, Event, error) {
	if now.Sub(st.QuietSince) < c.Quiet {
		return st, Event{}, c.dropTally(ctx, ch)
	}
	exact, left, done, err := c.tallyStep(ctx, ch.ID, st.QuietFP)
	if err != nil || !done {
		return st, Event{}, err
	}
	st.Tallied = true
	if !left.Done() {
		c.log().Info("crawl quiet, not drained", "crawl", ch.ID, "queued", left.Queued, "unparsed", left.Unparsed, "links", left.Links)
		return st, Event{}, nil
	}
	return c.ended(ctx, ch, st, exact, now)
}

// tallyStep takes the crawl's exact tally a step further (crawlstate.DrainedStep), from the
// counters' fingerprint fp: it returns the tally and true once it completed, false while steps
// are left, which the next checks take.
func (c *Checker) tallyStep(ctx context.Context, crawl string, fp int64) (crawlstate.Counters, crawlstate.Left, bool, error) {
	step, err := c.State.DrainedStep(ctx, crawl, fp, c.tallyBudget())
	if step.Dropped != "" {
		c.log().Warn("the crawl's tally starts again", "crawl", crawl, "why", step.Dropped)
	}
	if err != nil {
		return crawlstate.Counters{}, crawlstate.Left{}, false, err
	}
	if !step.Done {
		c.log().Info("the crawl's tally goes on at the next check", "crawl", crawl, "steps", step.Steps, "read", step.Read, "savedBytes", step.Saved)
		return crawlstate.Counters{}, crawlstate.Left{}, false, nil
	}
	return step.Counters, step.Left, true, nil
}

// dropTally deletes the crawl's saved tally, if it has one, when a check does not take it on: the
// crawl is paused, or its counters moved. A tally is only ever one of unchanged counters.
func (c *Checker) dropTally(ctx context.Context, ch crawlstate.Checks) error {
	if !ch.Tallying {
		return nil
	}
	return c.State.DropTally(ctx, ch.ID)
}

// ended is the step that decides the end of crawl ch with exact, its tally.
func (c *Checker) ended(_ context.Context, ch crawlstate.Checks, st crawlstate.Step, exact crawlstate.Counters, now time.Time) (crawlstate.Step, Event, error) {
	ev := eventOf(ch, exact, now, c.Prices)
	b, err := json.Marshal(ev)
	if err != nil {
		return st, Event{}, fmt.Errorf("encode the end of crawl %s: %w", ch.ID, err)
	}
	st.Event = string(b)
	return st, ev, nil
}

// announce gives the crawl's counter shards their time to live, puts the stored event, then marks
// it announced.
func (c *Checker) announce(ctx context.Context, crawl, stored string) error {
	var ev Event
	if err := json.Unmarshal([]byte(stored), &ev); err != nil {
		return fmt.Errorf("the stored end of crawl %s: %w", crawl, err)
	}
	if err := c.State.ExpireCounters(ctx, crawl, ev.FinishedAt.Add(c.State.Retention())); err != nil {
		return err
	}
	if err := c.Pub.Publish(ctx, ev); err != nil {
		return fmt.Errorf("announce the end of crawl %s: %w", crawl, err)
	}
	return c.State.MarkAnnounced(ctx, crawl)
}

// announceStall is announce for a stall: its event goes the same way, and its counter shards get
// the same time to live (a crawl that stalls and is never revived leaves nothing without one).
func (c *Checker) announceStall(ctx context.Context, crawl, stored string) error {
	var ev Event
	if err := json.Unmarshal([]byte(stored), &ev); err != nil {
		return fmt.Errorf("the stored stall of crawl %s: %w", crawl, err)
	}
	if err := c.State.ExpireCounters(ctx, crawl, ev.FinishedAt.Add(c.State.Retention())); err != nil {
		return err
	}
	if err := c.Pub.Publish(ctx, ev); err != nil {
		return fmt.Errorf("announce the stall of crawl %s: %w", crawl, err)
	}
	return c.State.MarkStallAnnounced(ctx, crawl)
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
