// Package crawlstate keeps the crawl's durable state in the table port: one item per URL with its
// state machine, one item per fetch message with its URLs' outcomes, one item per crawl with its
// start and page budget, the crawl's counters spread over CounterShards items, and one politeness
// slot per host. Every transition is a single conditional write, so duplicate deliveries and
// concurrent workers cannot move a URL twice (DESIGN invariants 1 to 4).
//
// A URL's life:
//
//	(absent) --Admit--> queued --Claim--> claimed --Record--> fetched | skipped | failed | stopped
//	(absent) --Reject-> skipped                              failed --(redrive) Claim--> ...
//	                                   fetched, unparsed, its stored page gone --Refetch--> claimed
//
// A claimed URL's outcome is written in its claim owner's group (the fetch message: see
// outcomes.go), one write for the message's URLs, and its item keeps the claim: its state is the
// outcome its owner's group holds, which Get and ScanURLs read.
//
// Keys: "u#<crawl>#<sha256(url)>" for URLs, "r#<crawl>#<message id>" for a fetch message's
// outcomes, "c#<crawl>" for crawls, "c#<crawl>#<n>" for the crawl's counter shards,
// "b#<crawl>#<host>" for the per-host page budget, and "p#<host>" for the politeness slot that
// every crawl and worker shares.
package crawlstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/crawlstack/crawlstack/shared/errclass"
	"github.com/crawlstack/crawlstack/shared/safelog"
	"github.com/crawlstack/crawlstack/shared/table"
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
	attrOwner    = "owner"
	attrLease    = "leaseUntil"
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
)

// ErrClaimed is returned by Claim when another live worker holds the URL, or the URL is already
// done: the message at hand is a duplicate and can be acknowledged.
var ErrClaimed = errors.New("url already claimed or done")

// ErrBudget is returned by ReserveBudget when the crawl has used up its pages (--max-pages); the
// URL ends skipped with class budget, the class the docs name for it.
var ErrBudget = errclass.Errorf(errclass.Budget, "page budget used up")

// Store is the crawl state on a table. It is safe for concurrent use.
type Store struct {
	t table.Table
	// Now is the clock; tests replace it.
	Now func() time.Time
	// CostCheck is how often BudgetOpen reads a crawl's ledger (0: DefaultCostCheck).
	CostCheck time.Duration
	// RunCheck is how long RunOf keeps a crawl's run state (0: DefaultRunCheck; below 0: not at all).
	RunCheck time.Duration
	// Retention is how long a crawl's items live after the crawl starts before the table's TTL
	// may delete them (see MarkStarted and AdmissionOpen).
	Retention time.Duration
	// BufferCounters keeps counter increments in memory until Flush, one write per crawl instead
	// of one per transition. Handlers flush at the end of every invocation.
	BufferCounters bool
	// HoldCounters, with BufferCounters, makes Flush keep the increments for WriteCounters, which
	// the process that owns the store calls on its own schedule. crawl run holds them: its handlers
	// all share one store, so it writes them every 100 ms and at the end rather than at the end of
	// each of thousands of invocations. A Lambda function must not: a frozen container keeps them.
	HoldCounters bool
	// CircuitFailures is how many failed first requests in a row open a host's circuit
	// (0: DefaultCircuitFailures; below 0: never); CircuitProbe is how long an open circuit waits
	// before each probe (0: DefaultCircuitProbe). See circuit.go.
	CircuitFailures int
	CircuitProbe    time.Duration

	starts    sync.Map // crawl -> its start (time.Time; zero when none is on record)
	slotSeen  sync.Map // host -> the next free politeness slot this store last wrote or saw (int64 ms)
	spare     sync.Map // spareKey -> *spares, the host's slots booked and not yet given out (BookSlots)
	throttles sync.Map // host -> its throttled gap as this store last saw it (throttle)
	circuits  sync.Map // host -> its circuit as this store last saw it (circuit)
	answers   answerTimes
	spent     sync.Map // crawl -> *spent, its ledger as last read (see BudgetOpen)
	runs      sync.Map // crawl -> *runSeen, its run state as last read (see RunOf)

	shards  sync.Map // crawl -> *atomic.Uint64, the counter shard of its last write (see shardKey)
	budgets sync.Map // budget item key -> *blockBudget, this store's block of that budget

	mu      sync.Mutex
	pending map[string]map[string]int64 // crawl -> counter -> increment, when buffering
}

// New returns a Store on t with a 30-day retention.
func New(t table.Table) *Store {
	return &Store{t: t, Now: time.Now, Retention: 30 * 24 * time.Hour}
}

// URLKey is the table key of a URL item; key is urlnorm.Key of the normalised URL.
func URLKey(crawl, key string) string { return "u#" + crawl + "#" + key }

// CrawlKey is the table key of a crawl item.
func CrawlKey(crawl string) string { return "c#" + crawl }

func budgetKey(crawl, host string) string { return "b#" + crawl + "#" + host }
func slotKey(host string) string          { return "p#" + host }

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
	// Page is set once the URL is fetched.
	Page *Page
	page string // Page as stored, for Refetch's condition
	by   string // the Links message that admitted the URL
	// marked and enqueued: an item admitted before attrBy carries an enqueued mark instead.
	marked, enqueued bool
	// redrive: a failure whose message went on to the DLQ (see Outcome.Redrivable).
	redrive bool
	// outcome is the outcome as its owner's group holds it (see Record), when it came from there.
	outcome string
}

// Unsent reports whether the Links message by must send this URL's fetch message (again): the URL
// is queued, no worker holds it, and by admitted it, so an earlier delivery of by may have stopped
// between the admission and the send (DESIGN invariant 3). A URL another message admitted is that
// message's to send. An item admitted before items named their message is unsent until marked
// enqueued, whoever asks.
func (u URL) Unsent(by string) bool {
	if u.State != Queued || u.Owner != "" {
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
		Detail: it.String(attrDetail), Owner: it.String(attrOwner),
		Lease: time.UnixMilli(it.Int(attrLease)), Parsed: it.Bool(attrParsed),
		Page: pageFrom(it.String(attrPage)), page: it.String(attrPage),
		by: it.String(attrBy), marked: it.Has(attrEnqueued), enqueued: it.Bool(attrEnqueued),
		redrive: it.Bool(attrRedrive),
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
	// Theirs: another Links message admitted the URL and no worker holds it yet. That message
	// sends it, and may not have yet: the URL must not be remembered as sent.
	Theirs
)

// Admit writes a queued item for the URL unless one exists. by names the Links message that admits
// it, the same for every delivery of that message (frontier.Source): the admission needs no second
// write to mark the fetch message sent, and a URL that two messages admit at once is sent once.
func (s *Store) Admit(ctx context.Context, crawl, key, rawURL, root string, depth int, by string) (AdmitResult, error) {
	now := s.Now()
	expires, err := s.expiry(ctx, crawl)
	if err != nil {
		return Known, err
	}
	item := table.Item{
		attrState: string(Queued), attrURL: rawURL, attrRoot: root, attrDepth: int64(depth),
		attrBy: by, attrUpdated: now.UnixMilli(), table.TTLAttr: expires,
	}
	err = s.t.Put(ctx, URLKey(crawl, key), item, table.ItemNotExists())
	if err == nil {
		if err := s.count(ctx, crawl, map[string]int64{"seen": 1}); err != nil {
			return Admitted, err
		}
		return Admitted, nil
	}
	cf, ok := table.IsConditionFailed(err)
	if !ok {
		return Known, fmt.Errorf("admit %s: %w", rawURL, err)
	}
	u := urlFrom(key, cf.Item)
	switch {
	case u.Unsent(by):
		return Unsent, nil
	case u.State == Queued && u.Owner == "":
		return Theirs, nil
	}
	return Known, nil
}

// Unadmit deletes a URL item that Admit just wrote, as long as nothing has happened to it since
// (still queued and unclaimed), and uncounts it.
func (s *Store) Unadmit(ctx context.Context, crawl, key string) error {
	err := s.t.Delete(ctx, URLKey(crawl, key), table.And(table.Eq(attrState, string(Queued)),
		table.Ne(attrEnqueued, true), table.NotExists(attrOwner)))
	if _, moved := table.IsConditionFailed(err); moved {
		return nil // another delivery took it further: it is theirs now
	}
	if err != nil {
		return fmt.Errorf("unadmit %s: %w", key, err)
	}
	return s.count(ctx, crawl, map[string]int64{"seen": -1})
}

// Reject records a URL that is not admitted (out of scope, a trap) as skipped, once. It returns
// false when the URL was already known.
func (s *Store) Reject(ctx context.Context, crawl, key, rawURL string, depth int, cause error) (bool, error) {
	now := s.Now()
	class := errclass.Of(cause)
	expires, err := s.expiry(ctx, crawl)
	if err != nil {
		return false, err
	}
	item := table.Item{
		attrState: string(Skipped), attrClass: string(class), attrDetail: safelog.Truncate(cause.Error()),
		attrURL: rawURL, attrDepth: int64(depth), attrUpdated: now.UnixMilli(), table.TTLAttr: expires,
	}
	err = s.t.Put(ctx, URLKey(crawl, key), item, table.ItemNotExists())
	if _, dup := table.IsConditionFailed(err); dup {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reject %s: %w", rawURL, err)
	}
	return true, s.count(ctx, crawl, map[string]int64{"seen": 1, "skipped": 1, "class_" + string(class): 1})
}

// Claim takes the URL for owner (the fetch message's id) for lease. It succeeds when the URL is
// queued (or failed, after a redrive) and no other owner holds it: the same owner may claim again
// (its own redelivery after a crash), unless its group recorded the URL already, and another
// owner's claim is taken over once its lease has run out without an outcome (see takeOver).
// Otherwise it returns ErrClaimed.
func (s *Store) Claim(ctx context.Context, crawl, key, owner string, lease time.Duration) (URL, error) {
	now := s.Now()
	claim := table.Update{Set: map[string]any{
		attrOwner: owner, attrLease: now.Add(lease).UnixMilli(), attrUpdated: now.UnixMilli(),
	}}
	claimable := table.Or(table.Eq(attrState, string(Queued)), table.And(table.Eq(attrState, string(Failed)), table.Eq(attrRedrive, true)))
	// A failed URL is claimed again only when its message went on to the DLQ and came back
	// through a redrive; any other delivery of a failed URL is a duplicate.
	it, err := s.t.Update(ctx, URLKey(crawl, key), claim,
		table.And(table.ItemExists(), claimable, table.Or(table.NotExists(attrOwner), table.NotExists(attrLease))))
	cf, held := table.IsConditionFailed(err)
	if err != nil && !held {
		return URL{}, fmt.Errorf("claim %s: %w", key, err)
	}
	if !held {
		return urlFrom(key, it), nil
	}
	u := urlFrom(key, cf.Item)
	switch {
	case !cf.Item.Has(attrState):
		return URL{}, ErrClaimed // no item: nothing to claim
	case u.Owner != owner:
		return s.takeOver(ctx, crawl, key, owner, lease, u)
	}
	// Its own claim, from an earlier delivery: claim it again unless that delivery recorded it.
	done, err := s.withOutcome(ctx, crawl, u)
	if err != nil {
		return URL{}, err
	}
	prev := u.State
	switch {
	case done.State == Failed && done.redrive:
		prev = Failed
	case done.State != Queued:
		return URL{}, ErrClaimed
	}
	it, err = s.t.Update(ctx, URLKey(crawl, key), claim, table.Eq(attrOwner, owner))
	if _, moved := table.IsConditionFailed(err); moved {
		return URL{}, ErrClaimed
	}
	if err != nil {
		return URL{}, fmt.Errorf("claim %s: %w", key, err)
	}
	again := urlFrom(key, it)
	again.State = prev
	return again, nil
}

// Refetch takes a fetched URL back for owner, claimed as Claim claims it, because the page stored
// for it is gone: missing or damaged. After a power loss, the embedded file store may lose a file
// whose record survived (fetch records a page while its file is being synced). lost is the URL as
// read before the page was found gone. Refetch returns ErrClaimed when the URL has moved on since:
// parsed, or fetched again by another worker. The crawl's fetched count gives the page back.
func (s *Store) Refetch(ctx context.Context, crawl, key, owner string, lease time.Duration, lost URL) (URL, error) {
	now := s.Now()
	claim := map[string]any{attrState: string(Queued), attrOwner: owner, attrLease: now.Add(lease).UnixMilli(),
		attrUpdated: now.UnixMilli()}
	if lost.outcome != "" {
		// Recorded in its owner's group: take the outcome back there, then the claim.
		_, err := s.t.Update(ctx, groupKey(crawl, GroupOf(lost.Owner)), table.Update{Remove: []string{outcomeAttr(key)}},
			table.Eq(outcomeAttr(key), lost.outcome))
		if _, moved := table.IsConditionFailed(err); moved {
			return URL{}, ErrClaimed
		}
		if err != nil {
			return URL{}, fmt.Errorf("refetch %s: %w", key, err)
		}
		it, err := s.t.Update(ctx, URLKey(crawl, key), table.Update{Set: claim}, table.Eq(attrOwner, lost.Owner))
		if _, moved := table.IsConditionFailed(err); moved {
			return URL{}, ErrClaimed
		}
		if err != nil {
			return URL{}, fmt.Errorf("refetch %s: %w", key, err)
		}
		return urlFrom(key, it), s.count(ctx, crawl, map[string]int64{string(Fetched): -1})
	}
	cond := table.And(table.Eq(attrState, string(Fetched)), table.Ne(attrParsed, true), table.Eq(attrPage, lost.page))
	it, err := s.t.Update(ctx, URLKey(crawl, key), table.Update{Set: claim, Remove: []string{attrPage}}, cond)
	if _, moved := table.IsConditionFailed(err); moved {
		return URL{}, ErrClaimed
	}
	if err != nil {
		return URL{}, fmt.Errorf("refetch %s: %w", key, err)
	}
	return urlFrom(key, it), s.count(ctx, crawl, map[string]int64{string(Fetched): -1})
}

// Release gives up owner's claim without a result (the fetch was deferred to a later message).
func (s *Store) Release(ctx context.Context, crawl, key, owner string) error {
	_, err := s.t.Update(ctx, URLKey(crawl, key), table.Update{Remove: []string{attrOwner, attrLease}},
		table.Eq(attrOwner, owner))
	if _, lost := table.IsConditionFailed(err); lost {
		return nil // someone else reclaimed it after our lease ran out: nothing of ours to release
	}
	if err != nil {
		return fmt.Errorf("release %s: %w", key, err)
	}
	return nil
}

// Finish records a terminal state for the URL claimed by owner (whose state was prev when
// claimed), in owner's group (see Record), and counts it. It returns false, and records nothing,
// when another owner took the URL over. A handler records a message's URLs with one Record.
func (s *Store) Finish(ctx context.Context, crawl, key, owner string, prev, to State, cause error) (bool, error) {
	return s.finish(ctx, crawl, owner, Outcome{Key: key, State: to, Prev: prev, Cause: cause})
}

// FinishFetched is Finish to fetched, with where the response is stored: a redelivered fetch
// message finds it there and sends the parse message again, without fetching again.
func (s *Store) FinishFetched(ctx context.Context, crawl, key, owner string, prev State, page Page) (bool, error) {
	return s.finish(ctx, crawl, owner, Outcome{Key: key, State: Fetched, Prev: prev, Page: &page})
}

// FailRedrivable is Finish to failed, for a message that goes on to the dead-letter queue: a
// redrive of that message may claim the URL again.
func (s *Store) FailRedrivable(ctx context.Context, crawl, key, owner string, prev State, cause error) (bool, error) {
	return s.finish(ctx, crawl, owner, Outcome{Key: key, State: Failed, Prev: prev, Cause: cause, Redrivable: true})
}

func (s *Store) finish(ctx context.Context, crawl, owner string, o Outcome) (bool, error) {
	lost, err := s.Record(ctx, crawl, GroupOf(owner), []Outcome{o})
	if err != nil {
		return false, err
	}
	return len(lost) == 0, nil
}

// SkipQueued moves a queued URL that no worker holds to skipped: its budget ran out before its
// fetch message was sent, or its page was already fetched as another URL's redirect target.
func (s *Store) SkipQueued(ctx context.Context, crawl, key string, cause error) error {
	class := errclass.Of(cause)
	_, err := s.t.Update(ctx, URLKey(crawl, key), table.Update{Set: map[string]any{
		attrState: string(Skipped), attrClass: string(class), attrDetail: safelog.Truncate(cause.Error()),
		attrUpdated: s.Now().UnixMilli(),
	}}, table.And(table.Eq(attrState, string(Queued)), table.NotExists(attrOwner)))
	if _, done := table.IsConditionFailed(err); done {
		return nil
	}
	if err != nil {
		return fmt.Errorf("skip %s: %w", key, err)
	}
	return s.count(ctx, crawl, map[string]int64{string(Skipped): 1, "class_" + string(class): 1})
}
