package crawlstate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// A crawl's end, announced once (package finish). The crawl item records a chain of drain checks
// (message.Check) and the end once it is decided:
//
//	(no end) --DecideEnd or a Step with an Event--> pending --MarkAnnounced--> announced
//
// The decision is one conditional write, so duplicate deliveries and concurrent checks decide at
// most once, and the event decided is stored with it: whoever announces it, again after a crash,
// sends the same event. A crawl whose work stopped moving is stalled the same way, by a Step with
// a Stall, and its chain of checks stops; a later check (sent by crawl resume, or a seed file of
// the crawl read again) takes the chain on at its seq, and its step clears the stall:
//
//	(running) --a Step with a Stall--> stall pending --MarkStallAnnounced--> stall announced
//	stall pending or announced --a Step without one--> (running)
//
// The decision of an end or a stall gives the crawl item its time to live: the decision plus the
// crawl's retention (ExpireCounters gives its counter shards the same); a step that clears a stall
// takes it away again.

// Attributes of the crawl item for its drain checks and its end.
const (
	attrCheckSeq    = "checkSeq"    // the seq of the chain's next check
	attrCheckBy     = "checkBy"     // the message that took the chain to checkSeq
	attrCheckAt     = "checkAt"     // when (Unix ms)
	attrQuietFP     = "quietFp"     // the crawl's counters, as a fingerprint, as the last check saw them
	attrQuietSince  = "quietSince"  // since when the fingerprint has not changed (Unix ms)
	attrTallyFP     = "tallyFp"     // the fingerprint when the crawl's items were last tallied
	attrTallyDrift  = "tallyDrift"  // 1: that tally found the crawl drained while its counters showed work left
	attrTallyAt     = "tallyAt"     // when (Unix ms)
	attrEnd         = "end"         // EndPending or EndAnnounced
	attrEndBy       = "endBy"       // what decided the end (a check message's id, "crawl run")
	attrEndAt       = "endAt"       // when (Unix ms)
	attrEndEvent    = "endEvent"    // the event decided, as JSON
	attrAnnouncedAt = "announcedAt" // when it was announced (Unix ms)
	// attrEndTok is the write token of the last write that decided or took over the end: a write
	// sent again by the SDK because its answer was lost finds its own token there, where a copy of
	// the same check (the same id, another call) that did not write finds another.
	attrEndTok = "endTok"
	// The crawl's stall, as its end: StallPending or StallAnnounced, what decided it (a check
	// message's id), when (Unix ms), and its event (JSON).
	attrStall      = "stall"
	attrStallBy    = "stallBy"
	attrStallAt    = "stallAt"
	attrStallEvent = "stallEvent"
)

// stallAttrs are the crawl item's attributes of a stall.
var stallAttrs = []string{attrStall, attrStallBy, attrStallAt, attrStallEvent}

// The states of a crawl's stall (Checks.Stall). A crawl with none is not stalled.
const (
	StallPending   End = "pending"
	StallAnnounced End = "announced"
)

// End is how far a crawl's end is announced.
type End string

// The ends. A crawl with none is not known to have ended.
const (
	EndPending   End = "pending"   // decided, and its event stored; not yet known to be sent
	EndAnnounced End = "announced" // its event was sent
)

// ErrStale is a Step's answer to a check that the crawl's chain of checks has passed (a copy of
// an older check, or a check of a crawl whose end is decided): it has nothing to do.
var ErrStale = errors.New("a check the crawl's chain has passed")

// Checks is what the crawl item records of the crawl's drain checks and its end.
type Checks struct {
	Crawl
	// Seq is the seq of the chain's next check; By the message that took the chain there.
	Seq int
	By  string
	// QuietFP is the counters' fingerprint as the last check saw it, unchanged since QuietSince.
	QuietFP    int64
	QuietSince time.Time
	// TallyFP and TallyAt are the fingerprint and the time when the crawl's items were last
	// tallied (Tallied: they were).
	TallyFP int64
	TallyAt time.Time
	Tallied bool
	// Drift: that tally found the crawl drained while its counters showed work left (Step.Drift).
	Drift bool
	// End, EndBy, EndAt and Event: the end decided, what decided it (or took it over: TakeEnd)
	// and when, and its event (JSON).
	End   End
	EndBy string
	EndAt time.Time
	Event string
	// StallBy, StallAt and StallEvent: what decided the crawl's stall (Crawl.Stall), when, and
	// its event (JSON); none once a later check took the chain on.
	StallBy    string
	StallAt    time.Time
	StallEvent string
	// Counted: the crawl counts its end's counters from its start (endcount.go).
	Counted bool
	// Tallying: a resumable tally of the crawl is saved, to go on at its next step (tallystep.go).
	Tallying bool
	// Extended is the version of the seed file last taken in by an extension of the crawl, and
	// Extending whether one is being taken in (extend.go).
	Extended  string
	Extending bool
}

// ChecksOf reads the crawl item; it returns table.ErrNotFound (wrapped) for an unknown crawl.
func (s *Runs) ChecksOf(ctx context.Context, crawl string) (Checks, error) {
	it, err := s.t.Get(ctx, CrawlKey(crawl))
	if err != nil {
		return Checks{}, fmt.Errorf("read crawl %s: %w", crawl, err)
	}
	return checksFrom(crawl, it), nil
}

func checksFrom(crawl string, it table.Item) Checks {
	c := Checks{Crawl: crawlFrom(crawl, it), Seq: int(it.Int(attrCheckSeq)), By: it.String(attrCheckBy),
		QuietFP: it.Int(attrQuietFP), TallyFP: it.Int(attrTallyFP), Tallied: it.Has(attrTallyFP), Drift: it.Int(attrTallyDrift) == 1,
		End: End(it.String(attrEnd)), EndBy: it.String(attrEndBy), Event: it.String(attrEndEvent),
		StallBy: it.String(attrStallBy), StallEvent: it.String(attrStallEvent),
		Counted: it.Bool(attrEndCounted), Tallying: it.Has(attrTallyGen),
		Extended: it.String(attrExtended), Extending: it.Has(attrExtending)}
	if it.Has(attrStallAt) {
		c.StallAt = time.UnixMilli(it.Int(attrStallAt))
	}
	if it.Has(attrQuietSince) {
		c.QuietSince = time.UnixMilli(it.Int(attrQuietSince))
	}
	if it.Has(attrEndAt) {
		c.EndAt = time.UnixMilli(it.Int(attrEndAt))
	}
	if it.Has(attrTallyAt) {
		c.TallyAt = time.UnixMilli(it.Int(attrTallyAt))
	}
	return c
}

// Step is what one check found, written by StepCheck.
type Step struct {
	// Seq and By are the check message's seq and id.
	Seq int
	By  string
	// QuietFP and QuietSince are the counters' fingerprint and since when it has not changed.
	QuietFP    int64
	QuietSince time.Time
	// Tallied: the check tallied the crawl's items, at QuietFP; Drift: that tally found the crawl
	// drained while its counters showed work left, which a later tally at the same counters
	// confirms before the end is decided (package finish).
	Tallied, Drift bool
	// Event, when set, decides the crawl's end with this event (JSON).
	Event string
	// Stall, when set, decides that the crawl is stalled, with this event (JSON).
	Stall string
	// Extended is the crawl's last extension as the check read it, before its counters
	// (Checks.Extended): an Event decides only if the crawl was not extended since (extend.go).
	Extended string
}

// StepCheck records a check of the crawl and takes its chain to Seq+1, when the chain is at
// st.Seq, or when st.By took it to Seq+1 already (its own earlier delivery, which stopped before
// the next check was sent). With an Event it also decides the crawl's end. A check the chain has
// passed, or one of a crawl whose end is decided, gets ErrStale and changes nothing. A deciding
// step that the SDK sent again because its answer was lost finds its own decision (attrEndTok),
// and is not stale: a stale check announces nothing. A deciding step of a crawl whose seed file
// was extended since st.Extended gets ErrExtended and changes nothing (extend.go).
func (s *Runs) StepCheck(ctx context.Context, crawl string, st Step) (Checks, error) {
	at := table.Eq(attrCheckSeq, int64(st.Seq))
	if st.Seq == 0 {
		at = table.Or(table.NotExists(attrCheckSeq), at)
	}
	mine := table.And(table.Eq(attrCheckSeq, int64(st.Seq+1)), table.Eq(attrCheckBy, st.By))
	now := s.now().UnixMilli()
	set := map[string]any{attrCheckSeq: int64(st.Seq + 1), attrCheckBy: st.By, attrCheckAt: now,
		attrQuietFP: st.QuietFP, attrQuietSince: st.QuietSince.UnixMilli()}
	if st.Tallied {
		set[attrTallyFP], set[attrTallyAt], set[attrTallyDrift] = st.QuietFP, now, int64(0)
		if st.Drift {
			set[attrTallyDrift] = int64(1)
		}
	}
	tok := ""
	var remove []string
	switch {
	case st.Event != "":
		tok = randomTag()
		set[attrEnd], set[attrEndBy], set[attrEndAt], set[attrEndEvent] = string(EndPending), st.By, now, st.Event
		set[attrEndTok] = tok
		set[table.TTLAttr] = s.expiresAfter(now)
		remove = stallAttrs // a stall it was in is over
	case st.Stall != "":
		set[attrStall], set[attrStallBy], set[attrStallAt], set[attrStallEvent] = string(StallPending), st.By, now, st.Stall
		set[table.TTLAttr] = s.expiresAfter(now)
	default:
		// the chain goes on: a stall it was in is over, and the crawl item lives on
		remove = append(slices.Clip(stallAttrs), table.TTLAttr)
	}
	cond := table.And(table.ItemExists(), table.NotExists(attrEnd), table.Or(at, mine))
	if st.Event != "" {
		cond = table.And(cond, notExtended(Checks{Extended: st.Extended}))
	}
	it, err := s.t.Update(ctx, CrawlKey(crawl), table.Update{Set: set, Remove: remove}, cond)
	if cf, stale := table.IsConditionFailed(err); stale {
		if tok != "" && cf.Item.String(attrEndTok) == tok {
			return checksFrom(crawl, cf.Item), nil // its own decision, sent again
		}
		if st.Event != "" && len(cf.Item) > 0 && !cf.Item.Has(attrEnd) && extendedSince(Checks{Extended: st.Extended}, cf.Item) {
			return Checks{}, fmt.Errorf("check %d of crawl %s: %w", st.Seq, crawl, ErrExtended)
		}
		return Checks{}, fmt.Errorf("check %d of crawl %s: %w", st.Seq, crawl, ErrStale)
	}
	if err != nil {
		return Checks{}, fmt.Errorf("check %d of crawl %s: %w", st.Seq, crawl, err)
	}
	return checksFrom(crawl, it), nil
}

// DecideEnd decides the crawl's end with event (JSON), by (what decided it), unless its end is
// decided already. It returns the crawl item as it is afterwards: its Event is the one decided,
// by this call or before it.
func (s *Runs) DecideEnd(ctx context.Context, crawl, by, event string) (Checks, error) {
	it, err := s.t.Update(ctx, CrawlKey(crawl), table.Update{Set: map[string]any{
		attrEnd: string(EndPending), attrEndBy: by, attrEndAt: s.now().UnixMilli(), attrEndEvent: event,
		table.TTLAttr: s.expiresAfter(s.now().UnixMilli()),
	}, Remove: stallAttrs}, table.And(table.ItemExists(), table.NotExists(attrEnd)))
	if cf, decided := table.IsConditionFailed(err); decided {
		if len(cf.Item) == 0 {
			return Checks{}, fmt.Errorf("end crawl %s: %w", crawl, ErrUnknownCrawl)
		}
		return checksFrom(crawl, cf.Item), nil
	}
	if err != nil {
		return Checks{}, fmt.Errorf("end crawl %s: %w", crawl, err)
	}
	return checksFrom(crawl, it), nil
}

// TakeEnd hands a pending end from from (its EndBy) to to, who will announce it, and restarts its
// EndAt: for a check that finds the end's decider gone. It returns ErrStale when the end is no
// longer pending or another took it first (not when its own write, sent again, took it).
func (s *Runs) TakeEnd(ctx context.Context, crawl, from, to string) error {
	tok := randomTag()
	_, err := s.t.Update(ctx, CrawlKey(crawl), table.Update{Set: map[string]any{attrEndBy: to, attrEndAt: s.now().UnixMilli(), attrEndTok: tok}},
		table.And(table.Eq(attrEnd, string(EndPending)), table.Eq(attrEndBy, from)))
	if cf, moved := table.IsConditionFailed(err); moved && cf.Item.String(attrEndTok) != tok {
		return fmt.Errorf("take the end of crawl %s: %w", crawl, ErrStale)
	}
	if _, moved := table.IsConditionFailed(err); moved {
		return nil // its own take-over, sent again
	}
	if err != nil {
		return fmt.Errorf("take the end of crawl %s: %w", crawl, err)
	}
	return nil
}

// MarkAnnounced records that the crawl's end event was sent. It is a no-op once recorded.
func (s *Runs) MarkAnnounced(ctx context.Context, crawl string) error {
	_, err := s.t.Update(ctx, CrawlKey(crawl), table.Update{Set: map[string]any{
		attrEnd: string(EndAnnounced), attrAnnouncedAt: s.now().UnixMilli(),
	}}, table.Eq(attrEnd, string(EndPending)))
	if _, done := table.IsConditionFailed(err); done {
		return nil
	}
	if err != nil {
		return fmt.Errorf("mark the end of crawl %s announced: %w", crawl, err)
	}
	return nil
}

// MarkStallAnnounced records that the crawl's stall event was sent. It is a no-op once recorded,
// or once a later check took the chain on.
func (s *Runs) MarkStallAnnounced(ctx context.Context, crawl string) error {
	_, err := s.t.Update(ctx, CrawlKey(crawl), table.Update{Set: map[string]any{attrStall: string(StallAnnounced)}},
		table.Eq(attrStall, string(StallPending)))
	if _, done := table.IsConditionFailed(err); done {
		return nil
	}
	if err != nil {
		return fmt.Errorf("mark the stall of crawl %s announced: %w", crawl, err)
	}
	return nil
}

// expiresAfter is the time to live (Unix seconds) of a crawl's items decided at ms (Unix ms): its
// retention later.
func (s *Runs) expiresAfter(ms int64) int64 { return time.UnixMilli(ms).Add(s.retention).Unix() }

// Left is the work a crawl's items still show.
type Left struct {
	// Queued are the URLs admitted and not yet ended.
	Queued int64
	// Unparsed are the fetched pages whose parse message is not marked done.
	Unparsed int64
	// Links are the Links messages named sent (by a parse mark, or a note of schedule's or the
	// CLI's) and not marked admitted (links.go).
	Links int64
}

// Done reports whether the items show no work left.
func (l Left) Done() bool { return l.Queued == 0 && l.Unparsed == 0 && l.Links == 0 }
