// Package crawlstate keeps the crawl's durable state in the table port: one item per URL with its
// state machine, one item per fetch message with its URLs' outcomes, one item per crawl with its
// start and page budget, the crawl's counters spread over CounterShards items, and one politeness
// slot per host. Every transition is a single conditional write, so duplicate deliveries and
// concurrent workers cannot move a URL twice (DESIGN invariants 1 to 4).
//
// A URL's life:
//
//	(absent) --AdmitIn--> queued --ClaimGroup--> claimed --Record--> fetched | skipped | failed | stopped
//	(absent) --Reject--> skipped                                 failed --(redrive) ClaimGroup--> ...
//	                                   fetched, unparsed, its stored page gone --Refetch--> claimed
//
// A URL's item is written once, at its admission, with the group it is sent in; its claim and
// its outcome are written in its group's item (outcomes.go), one write for all of a fetch
// message's URLs each. Get and EachURL read a URL's state from there.
//
// Every write survives its own replay (DESIGN invariant 10). When DynamoDB applies a write and
// its answer is lost, the SDK sends it again, and a conditional write may then fail on its own
// first attempt's result. So each write that can tell its success from another's does, from the
// item as it was, which a failed condition returns: an outcome by its writer's token or its WARC
// record's place (Record, SkipQueued), an admission by its batch's random group (AdmitIn), a
// refetch by its owner and lease, the end's decision and take-over by a token (finish.go).
// Counters and budget blocks, which ADD, number each store's writes (countwrite.go, block.go), so
// they count once. An update names each attribute once (table.Update.Check).
//
// The store is three types over one table and one clock (store.go), one per kind of item, which
// New builds together into a Store:
//   - URLs: each URL of a crawl, its item and its group's claims and outcomes, the parse marks and
//     Links items, and the tallies that read them (this file, claim.go, outcomes.go, reopen.go,
//     parsed.go, links.go, endcount.go, read.go, tally.go, erase.go);
//   - Hosts: the state of each host that every crawl shares, its politeness slot, circuit,
//     throttled gap and the usual time of its answers (slots.go, spare.go, circuit.go,
//     circuitnotes.go, throttle.go, throttled.go);
//   - Runs: each crawl as a whole, its crawl item (run state, start, renewal and expiry, the chain
//     of checks and the end, the ledger), its page budget and its counter shards (run.go, life.go,
//     renew.go, expiry.go, finish.go, ledger.go, block.go, budget.go, giveback.go, counters.go,
//     countwrite.go).
//
// URLs is given the Runs, for its items' expiry and the crawl's counters; URLs and Hosts count
// through the Runs' counter writer, so a store writes each crawl's counters in one sequence
// (countwrite.go). Runs needs neither. A consumer takes the narrowest of the three that serves it.
//
// The table's key layout is in one place, keys.go.
package crawlstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/safelog"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// State is a URL's state.
type State string

// The URL states. Queued is the only non-terminal one; Failed may be claimed again after a redrive.
// Stopped ends the URLs a stopped crawl never fetched (see SetRun).
const (
	Queued  State = "queued"
	Fetched State = "fetched"
	Skipped State = "skipped"
	Failed  State = "failed"
	Stopped State = "stopped"
)

// Attribute names of the items (all aliased in expressions by the DynamoDB adapter).
const (
	attrState    = "state"
	attrClass    = "class"
	attrDetail   = "detail"
	attrURL      = "url"
	attrRoot     = "root"
	attrDepth    = "depth"
	attrBy       = "by"       // the Links message that admitted the URL (see Admit)
	attrEnqueued = "enqueued" // only on items admitted before attrBy: true once the fetch message was sent
	attrGroup    = "g"        // the group the URL is claimed and recorded in (see outcomes.go)
	attrParsed   = "parsed"
	attrRedrive  = "redrivable"
	attrPage     = "page" // the stored response of a fetched URL, as JSON (see Page)
	attrUpdated  = "updatedAt"
	attrNext     = "nextAt"
	attrBudget   = "budget"
	attrPages    = "pages"
	// On the crawl item: why and when the crawl stopped admitting URLs (see BudgetOpen).
	attrStopped   = "stopped"
	attrStoppedAt = "stoppedAt"
	// attrTok is a refused URL's write token (Reject).
	attrTok = "k"
	// attrFrom is on an item admitted afresh over a half-done un-admission (readmit): the group
	// of the first admission taken back, whose Unadmit owns the URL's count (see Unadmit).
	attrFrom = "from"
)

// ErrClaimed is returned by Claim when another live worker holds the URL, or the URL is already
// done: the message at hand is a duplicate and can be acknowledged.
var ErrClaimed = errors.New("url already claimed or done")

// ErrBudget is returned by ReserveBudget when the crawl has used up its pages (--max-pages); the
// URL ends skipped with class budget, the class the docs name for it.
var ErrBudget = errclass.Errorf(errclass.Budget, "page budget used up")

// Page is where a fetched URL's response is stored, kept on its item so that a lost parse message
// can be sent again without fetching the page again (the fetch stage's outbox).
type Page struct {
	WARCKey     string    `json:"k"`
	Offset      int64     `json:"o"`
	Length      int64     `json:"l"`
	FinalURL    string    `json:"u"`
	Status      int       `json:"s"`
	ContentType string    `json:"t,omitempty"`
	FetchedAt   time.Time `json:"f"`
	// Msg names the parse message that carries the page (message.Parse.Name): parse marks it done
	// under that name (MarkMessageParsed).
	Msg string `json:"m,omitempty"`
	// ETag, LastModified and Digest are the response's validators and its payload digest: a
	// recrawl sends them in its conditional request, and compares digests (shared/crawl/recrawl).
	ETag         string `json:"e,omitempty"`
	LastModified string `json:"lm,omitempty"`
	Digest       string `json:"d,omitempty"`
	// Unchanged is set when a recrawl found the page unchanged and stored a revisit record: where
	// its payload is, and which earlier record of it to reuse (shared/crawl/recrawl).
	Unchanged *message.Unchanged `json:"un,omitempty"`
}

// URL is a URL item.
type URL struct {
	Key    string
	URL    string
	Root   string
	Depth  int
	State  State
	Class  errclass.Class
	Detail string
	Owner  string
	Lease  time.Time
	Parsed bool
	// Group is the group the URL was admitted in ("": its own, see GroupOf).
	Group string
	// Page is set once the URL is fetched.
	Page *Page
	by   string // the Links message that admitted the URL
	// marked and enqueued: an item admitted before attrBy carries an enqueued mark instead.
	marked, enqueued bool
	// redrive: a failure whose message went on to the DLQ (see Outcome.Redrivable).
	redrive bool
	// outcome is the outcome as its group holds it (see Record), when it came from there.
	outcome string
	// gone: its group holds a tombstone (Unadmit).
	gone bool
	// from: the item was admitted afresh over a half-done un-admission of that group (attrFrom).
	from string
}

// Unsent reports whether the Links message by must send this URL's fetch message (again): the URL
// is queued, no worker holds it (as its group says: read it with Get), and by admitted it, so an earlier delivery of by may have stopped
// between the admission and the send (DESIGN invariant 3). A URL another message admitted is that
// message's to send. An item admitted before items named their message is unsent until marked
// enqueued, whoever asks.
func (u URL) Unsent(by string) bool {
	if u.State != Queued || u.Owner != "" || u.gone {
		return false
	}
	if u.marked {
		return !u.enqueued
	}
	return u.by == by
}

func urlFrom(key string, it table.Item) URL {
	return URL{
		Key: key, URL: it.String(attrURL), Root: it.String(attrRoot), Depth: int(it.Int(attrDepth)),
		State: State(it.String(attrState)), Class: errclass.Class(it.String(attrClass)),
		Detail: it.String(attrDetail), Parsed: it.Bool(attrParsed), Group: it.String(attrGroup),
		Page: pageFrom(it.String(attrPage)), by: it.String(attrBy), marked: it.Has(attrEnqueued), enqueued: it.Bool(attrEnqueued),
		redrive: it.Bool(attrRedrive), from: it.String(attrFrom),
	}
}

func pageFrom(s string) *Page {
	if s == "" {
		return nil
	}
	var p Page
	if json.Unmarshal([]byte(s), &p) != nil {
		return nil
	}
	return &p
}

// Terminal reports whether s ends a URL's life.
func (s State) Terminal() bool { return s == Fetched || s == Skipped || s == Failed || s == Stopped }

// counter is the name of the crawl counter of URLs in state s. Stopped URLs are counted apart from
// the crawl item's "stopped" attribute, which holds why the crawl stopped admitting (Counters.Stopped).
func (s State) counter() string {
	if s == Stopped {
		return "stopped_urls"
	}
	return string(s)
}

// AdmitResult says what Admit found.
type AdmitResult int

// The outcomes of Admit.
const (
	// Admitted: the URL is new; its item is queued and its fetch message must be sent.
	Admitted AdmitResult = iota
	// Unsent: the same Links message admitted the URL before, and no worker holds it yet: an
	// earlier delivery may have stopped between the write and the send, so send it again (the
	// outbox rule, invariant 3). If it was sent, the copy is a duplicate that the claim drops.
	Unsent
	// Known: the URL is done, or held by a worker: its fetch message went out.
	Known
	// Theirs: another Links message admitted the URL and no worker holds it yet, or is taking its
	// admission back (Unadmit: a tombstone in its group, its item not yet gone). That message
	// sends it, or its redelivery admits it afresh: the URL must not be remembered as sent.
	Theirs
)

// Admit is AdmitIn with the URL as a group of its own.
func (s *URLs) Admit(ctx context.Context, crawl, key, rawURL, root string, depth int, by string) (AdmitResult, error) {
	res, _, err := s.AdmitIn(ctx, crawl, "", key, rawURL, root, depth, by)
	return res, err
}

// AdmitIn writes a queued item for the URL in group unless one exists. by names the Links message
// that admits it, the same for every delivery of that message (frontier.Source): the admission
// needs no second write to mark the fetch message sent, and a URL that two messages admit at once
// is sent once. It returns the URL's group: group when admitted, the item's own otherwise, which
// any fetch message sent for the URL again must name. For an item found there, the URL's group is
// read too, to tell a URL a message holds (or is done with) from one nobody sent yet.
//
// The group is the admission's write token: groups are named at random for each batch, so an
// item found with this group and by is this call's own write, applied before and sent again
// because its answer was lost. An item found that by admitted and then took back (Unadmit: a
// tombstone in its group) before its item went is admitted afresh in group: the un-admission is
// finished, and the URL is not stranded as another message's.
func (s *URLs) AdmitIn(ctx context.Context, crawl, group, key, rawURL, root string, depth int, by string) (AdmitResult, string, error) {
	now := s.now()
	expires, err := s.crawls.expiry(ctx, crawl)
	if err != nil {
		return Known, "", err
	}
	item := table.Item{
		attrState: string(Queued), attrURL: rawURL, attrRoot: root, attrDepth: int64(depth),
		attrBy: by, attrUpdated: now.UnixMilli(), table.TTLAttr: expires,
	}
	if group != "" {
		item[attrGroup] = group
	}
	err = s.t.Put(ctx, URLKey(crawl, key), item, table.ItemNotExists())
	cf, ok := table.IsConditionFailed(err)
	if err != nil && !ok {
		// Applied with its answer lost for good (the SDK's retries ran out, a timeout), the put
		// is counted by this call or never: a redelivery finds the URL Unsent, and counts nothing.
		putErr := err
		if cf, err = s.readBack(ctx, URLKey(crawl, key), putErr); err != nil {
			return Known, "", fmt.Errorf("admit %s: %w", rawURL, err)
		}
		if len(cf.Item) == 0 {
			return Known, "", fmt.Errorf("admit %s: %w", rawURL, putErr) // not applied
		}
	}
	if cf == nil || ownAdmission(cf.Item, group, by) {
		return Admitted, GroupOf(URL{Key: key, Group: group}), s.counts.count(ctx, crawl, map[string]int64{"seen": 1})
	}
	u, err := s.withGroup(ctx, crawl, urlFrom(key, cf.Item))
	if err != nil {
		return Known, "", err
	}
	if u.gone && u.by == by && group != "" {
		return s.readmit(ctx, crawl, group, u, item)
	}
	res, g := admitResult(u, by)
	return res, g, nil
}

// readBack reads the item with the key after a write to it failed with writeErr, which is no
// condition failure: the write may have been applied, its answer lost for good. It returns the item
// as a condition failure would (no item: nil), for the caller to tell whether the write was
// applied, as it does when a replay of the write fails its condition; or writeErr and the read's
// error when the item cannot be read either.
func (s *URLs) readBack(ctx context.Context, key table.Key, writeErr error) (*table.ConditionFailedError, error) {
	it, err := s.t.Get(ctx, key)
	switch {
	case errors.Is(err, table.ErrNotFound):
		it = nil
	case err != nil:
		return nil, errors.Join(writeErr, fmt.Errorf("read whether it was applied: %w", err))
	}
	return &table.ConditionFailedError{Key: key, Item: it}, nil
}

// ownAdmission reports whether the URL item it is AdmitIn's write in group by by (see there).
func ownAdmission(it table.Item, group, by string) bool {
	return group != "" && it.String(attrGroup) == group && it.String(attrBy) == by && it.String(attrState) == string(Queued)
}

// admitResult is what AdmitIn says of u, a URL it found admitted, to the Links message by.
func admitResult(u URL, by string) (AdmitResult, string) {
	switch {
	case u.Unsent(by):
		return Unsent, GroupOf(u)
	case u.State == Queued && u.Owner == "":
		return Theirs, GroupOf(u)
	}
	return Known, GroupOf(u)
}

// readmit finishes the un-admission of gone, a URL that the Links message at hand admitted and
// took back (Unadmit) before its item went, and admits it afresh in group: the item is written
// over, on condition that it is still the one taken back. The URL stays counted seen, as it was:
// the un-admission that uncounts it is the delete this write replaces. The item names the group of
// the first admission taken back (attrFrom), for that Unadmit, still under way or replayed, to
// tell this item from one admitted after its delete was applied; and an item so admitted is never
// deleted by an Unadmit of its own, only tombstoned, so that an item gone from the first group
// is that Unadmit's own delete (see Unadmit).
func (s *URLs) readmit(ctx context.Context, crawl, group string, gone URL, item table.Item) (AdmitResult, string, error) {
	was := table.Eq(attrGroup, gone.Group)
	if gone.Group == "" {
		was = table.NotExists(attrGroup)
	}
	item[attrFrom] = gone.from
	if gone.from == "" {
		item[attrFrom] = GroupOf(gone)
	}
	err := s.t.Put(ctx, URLKey(crawl, gone.Key), item, table.And(table.Eq(attrState, string(Queued)), table.Eq(attrBy, gone.by), was))
	cf, moved := table.IsConditionFailed(err)
	switch {
	case err == nil, moved && ownAdmission(cf.Item, group, gone.by):
		return Admitted, group, nil
	case !moved:
		return Known, "", fmt.Errorf("admit %s afresh: %w", gone.URL, err)
	case len(cf.Item) == 0:
		return Known, "", fmt.Errorf("admit %s afresh: its item went meanwhile", gone.URL)
	}
	u, err := s.withGroup(ctx, crawl, urlFrom(gone.Key, cf.Item))
	if err != nil {
		return Known, "", err
	}
	res, g := admitResult(u, gone.by)
	return res, g, nil
}

// Reject records a URL that is not admitted (out of scope, a trap) as skipped, once. It returns
// false when the URL was already known.
func (s *URLs) Reject(ctx context.Context, crawl, key, rawURL string, depth int, cause error) (bool, error) {
	now := s.now()
	class := errclass.Of(cause)
	expires, err := s.crawls.expiry(ctx, crawl)
	if err != nil {
		return false, err
	}
	// A random token (9 bytes) tells this write's replay from another refusal of the URL.
	tok := randomTag()
	item := table.Item{
		attrState: string(Skipped), attrClass: string(class), attrDetail: safelog.Truncate(cause.Error()),
		attrURL: rawURL, attrDepth: int64(depth), attrUpdated: now.UnixMilli(), table.TTLAttr: expires, attrTok: tok,
	}
	err = s.t.Put(ctx, URLKey(crawl, key), item, table.ItemNotExists())
	cf, dup := table.IsConditionFailed(err)
	if err != nil && !dup {
		// Maybe applied with its answer lost for good: counted by this call or never (see AdmitIn).
		putErr := err
		if cf, err = s.readBack(ctx, URLKey(crawl, key), putErr); err != nil {
			return false, fmt.Errorf("reject %s: %w", rawURL, err)
		}
		if len(cf.Item) == 0 {
			return false, fmt.Errorf("reject %s: %w", rawURL, putErr) // not applied
		}
	}
	if cf != nil && cf.Item.String(attrTok) != tok {
		return false, nil // another refusal's, or an admission's
	}
	// Written now, or by its own earlier attempt (a replay, or an answer lost).
	return true, s.counts.count(ctx, crawl, map[string]int64{"seen": 1, "skipped": 1, "class_" + string(class): 1})
}

// Finish records a terminal state for the URL claimed by owner (whose state was prev when
// claimed) in its group (see Record), and counts it. It returns false, and records nothing, when
// another owner took the URL over. It reads the URL's item for its group: the fetcher records a
// message's URLs with one Record instead.
func (s *URLs) Finish(ctx context.Context, crawl, key, owner string, prev, to State, cause error) (bool, error) {
	return s.finish(ctx, crawl, Outcome{Key: key, State: to, Prev: prev, Cause: cause, Owner: owner})
}

// FinishFetched is Finish to fetched, with where the response is stored: a redelivered fetch
// message finds it there and sends the parse message again, without fetching again.
func (s *URLs) FinishFetched(ctx context.Context, crawl, key, owner string, prev State, page Page) (bool, error) {
	return s.finish(ctx, crawl, Outcome{Key: key, State: Fetched, Prev: prev, Page: &page, Owner: owner})
}

// FailRedrivable is Finish to failed, for a message that goes on to the dead-letter queue: a
// redrive of that message may claim the URL again.
func (s *URLs) FailRedrivable(ctx context.Context, crawl, key, owner string, prev State, cause error) (bool, error) {
	return s.finish(ctx, crawl, Outcome{Key: key, State: Failed, Prev: prev, Cause: cause, Redrivable: true, Owner: owner})
}

func (s *URLs) finish(ctx context.Context, crawl string, o Outcome) (bool, error) {
	it, err := s.t.Get(ctx, URLKey(crawl, o.Key))
	if err != nil {
		return false, fmt.Errorf("finish %s: %w", o.Key, err)
	}
	lost, err := s.Record(ctx, crawl, GroupOf(urlFrom(o.Key, it)), []Outcome{o})
	if err != nil {
		return false, err
	}
	return len(lost) == 0, nil
}
