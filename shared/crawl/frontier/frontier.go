// Package frontier is the crawl's frontier: it decides which URLs are admitted to a crawl, for the
// schedule handler (package scheduler, which feeds it). For each URL of a Links message it
// normalises, checks scope, depth, traps and budgets, drops duplicates (a Bloom filter in warm
// memory, confirmed by the table, then a conditional write) and sends fetch messages.
// A schedule batch admits its Links messages one by one (Stage) and sends the fetch messages of all
// of them at once (Send): the URLs due back at the same second share one message, whichever Links
// message admitted them (a wide crawl's links come a host to a message, a second apart), which
// cuts the fetch queue's sends, receives and deletes several times over.
//
// Admission is safe across crashes (DESIGN invariant 3): the URL's item is written before its fetch
// message is sent, and names the Links message that admitted it (Source, a digest of the message,
// the same for every delivery of it). When the message is delivered again, every URL it admitted
// that no worker holds yet is sent again: the send may not have happened, and if it did, the claim
// drops the copy. A URL that another message admitted is that message's to send, so two messages
// that admit one URL at once send it once.
//
// The Bloom filter only ever holds URLs confirmed as sent (by this process), held by a worker or
// done, so a false positive costs one extra read, never a lost URL; a URL another message admitted
// and may not have sent yet is never put in it. In front of it, a bounded set of the most
// recently confirmed URLs, in normalised form (recent.go), answers most repeats exactly: a page's
// links mostly point at pages the crawl met a moment ago, and parse sends them normalised, so such
// a link costs neither normalising, the SHA-256 of its key nor a table read: only a fast hash of
// it as sent.
package frontier

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/crawlstack/crawlstack/shared/observe/metrics"

	"github.com/crawlstack/crawlstack/shared/crawl/cost"

	"github.com/bits-and-blooms/bloom/v3"
	"golang.org/x/sync/errgroup"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/optout"
	"github.com/crawlstack/crawlstack/shared/crawl/scope"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/port/queue"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// DefaultAdmitConcurrency is how many URLs of one Links message are admitted at once, unless
// Config.AdmitConcurrency says otherwise: a schedule invocation works on up to its batch
// concurrency messages at once, each admission a few table requests.
const DefaultAdmitConcurrency = 8

// DefaultSpareSlots is how many of a host's slots a booking takes beyond its batch's URLs. A wide
// crawl's schedule batch brings a host a URL or two, so each booking was a write for about one
// URL; with two spares, the host's next two URLs need none. make cost measured the change
// (docs/cost.md).
const DefaultSpareSlots = 2

// Config is what admission needs to know about the crawl.
type Config struct {
	Rules scope.Rules
	// MaxPages bounds the pages admitted per crawl (0: unlimited).
	MaxPages int
	// MaxPagesPerHost bounds the pages admitted per host and crawl (0: unlimited): a trap guard.
	MaxPagesPerHost int
	// FetchQueue is the fetch queue's address.
	FetchQueue string
	// BloomCapacity and BloomFalsePositive size the warm-memory filter.
	BloomCapacity      uint
	BloomFalsePositive float64
	// RecentCapacity bounds the exact set of recently confirmed URLs (about 70 bytes each, none of
	// them scanned by the collector: recent.go).
	RecentCapacity int
	// BudgetUSD stops admitting URLs once the crawl's ledger, at Prices, reaches it (0: none).
	BudgetUSD float64
	Prices    cost.Prices
	// HostInterval is the gap between two requests to one host (the fetcher's, before any
	// robots.txt Crawl-delay); 0 books no politeness slots here and leaves them to the fetcher.
	HostInterval time.Duration
	// SlotLead brings a fetch message back this much before its slot, on top of the second SQS
	// delays round to: the fetch event source's batching window, which may hold it that long.
	SlotLead time.Duration
	// AdmitConcurrency is how many URLs of one Links message are admitted at once (0:
	// DefaultAdmitConcurrency). On the embedded backend the table's writes made at once share a
	// commit, so more at once admits a message's URLs sooner (crawl run sets it).
	AdmitConcurrency int
	// SpareSlots is how many of a host's slots a booking takes beyond the URLs at hand, kept for
	// the host's next ones (crawlstate.Store.BookSlots): 0 is DefaultSpareSlots, below 0 none.
	SpareSlots int
}

// Deps are what a Frontier works with. The crawl state's capabilities (state.go) are each a
// field: one crawlstate.Store gives them all.
type Deps struct {
	Admissions Admissions
	Skips      Skips
	Gates      Gates
	PageBudget PageBudget
	Counters   Counters
	Slots      Slots
	Starts     Starts
	Send       queue.Sender
	// Log is where admission logs (nil: slog.Default()).
	Log *slog.Logger
	// OptOuts, if set, is checked for every URL in scope: one on the list ends skipped with class
	// opted_out (docs/erasure.md).
	OptOuts OptOuts
	// Crawls, if set, gives each crawl's rules, page bounds and rate (a spec's over the stack's);
	// nil: Config's Rules, MaxPages, MaxPagesPerHost and HostInterval for every crawl.
	Crawls CrawlSettings
}

// OptOuts tells whether a URL is on the opt-out list (optout.Matcher): its owner asked not to be
// crawled, or its page was purged.
type OptOuts interface {
	OptedOut(ctx context.Context, u *url.URL) (optout.Entry, bool, error)
}

// CrawlSettings tells the settings of one crawl (specstore.Store).
type CrawlSettings interface {
	For(ctx context.Context, crawl string) (*crawlspec.Crawl, error)
}

// limits are the admission settings of one crawl.
type limits struct {
	rules                     scope.Rules
	maxPages, maxPagesPerHost int
	interval                  time.Duration
}

// limitsOf returns crawl's admission settings.
func (f *Frontier) limitsOf(ctx context.Context, crawl string) (limits, error) {
	if f.crawls == nil {
		return limits{f.cfg.Rules, f.cfg.MaxPages, f.cfg.MaxPagesPerHost, f.cfg.HostInterval}, nil
	}
	c, err := f.crawls.For(ctx, crawl)
	if err != nil {
		return limits{}, err
	}
	interval := f.cfg.HostInterval
	if c.Spec != nil && c.Spec.Rate != nil {
		interval = crawlstate.IntervalOf(c.HostRPS)
	}
	return limits{c.Rules, c.MaxPages, c.MaxPagesPerHost, interval}, nil
}

// Frontier admits URLs. It is safe for concurrent use.
type Frontier struct {
	cfg        Config
	admissions Admissions
	skips      Skips
	gates      Gates
	pageBudget PageBudget
	counters   Counters
	slots      Slots
	starts     Starts
	send       queue.Sender
	log        *slog.Logger
	optOuts    OptOuts
	crawls     CrawlSettings
	now        func() time.Time

	mu     sync.Mutex
	known  *bloom.BloomFilter
	recent *recentSet
	seeds  [2]maphash.Seed // recentKey's
}

// New returns a Frontier, complete: nothing is set on it afterwards.
func New(cfg Config, d Deps) *Frontier {
	if cfg.BloomCapacity == 0 {
		cfg.BloomCapacity = 1_000_000
	}
	if cfg.AdmitConcurrency <= 0 {
		cfg.AdmitConcurrency = DefaultAdmitConcurrency
	}
	if cfg.BloomFalsePositive == 0 {
		cfg.BloomFalsePositive = 1e-4
	}
	if cfg.RecentCapacity == 0 {
		cfg.RecentCapacity = 100_000
	}
	if cfg.SpareSlots == 0 {
		cfg.SpareSlots = DefaultSpareSlots
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	recent := newRecentSet(cfg.RecentCapacity)
	return &Frontier{cfg: cfg, admissions: d.Admissions, skips: d.Skips, gates: d.Gates, pageBudget: d.PageBudget,
		counters: d.Counters, slots: d.Slots, starts: d.Starts, send: d.Send, log: d.Log, optOuts: d.OptOuts, crawls: d.Crawls,
		now: time.Now, known: bloom.NewWithEstimates(cfg.BloomCapacity, cfg.BloomFalsePositive), recent: recent,
		seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}}
}

// Result counts what one Admit call did.
type Result struct {
	Sent, Known, Rejected, Invalid int
}

type pending struct {
	crawl string
	key   string
	group string // the group it was admitted in (groups.go)
	place int    // its place among its host's URLs of the batch, as its group was guessed (-1: none)
	host  string // the URL's host and port, whose politeness slots it takes
	// interval is the gap between the host's requests at the crawl's rate (0: none booked here).
	interval time.Duration
	msg      message.Target
	// resent: the URL was admitted by an earlier delivery of the same message, which may still be
	// at work (and may take its admission back): the URL is sent but not remembered.
	resent bool
}

// Admit admits the URLs of one Links message and sends their fetch messages (Stage, then Send).
// It returns an error (and the caller retries the whole message) only when the table or the queue
// failed; per-URL refusals are recorded, not errors.
func (f *Frontier) Admit(ctx context.Context, m *message.Links) (Result, error) {
	st, err := f.Stage(ctx, m)
	sendErr := f.Send(ctx, []*Staged{st})[0]
	return st.Result, errors.Join(err, sendErr)
}

// Staged is a Links message admitted and not yet sent: Send sends the fetch messages of many.
type Staged struct {
	crawl string
	out   []pending
	// Result counts what admission did; Send adds the URLs it sent.
	Result Result
}

// Crawl is the crawl of the staged message.
func (s *Staged) Crawl() string { return s.crawl }

// Stage admits the URLs of one Links message, and returns the fetch messages left to send. It
// returns an error (and the caller retries the whole message) when the table failed; the URLs
// admitted all the same are in the Staged, to be sent: a URL that fails stops no other, and the
// redelivery of m redoes only the rest (the sent ones are known to this frontier by then), so a
// message of many links gets through a table that fails now and then.
func (f *Frontier) Stage(ctx context.Context, m *message.Links) (*Staged, error) {
	st := &Staged{crawl: m.Crawl}
	if _, ok := ctx.Value(groupsKey{}).(*groups); !ok {
		ctx = WithGroups(ctx) // a message staged alone has groups of its own
	}
	lim, err := f.limitsOf(ctx, m.Crawl)
	if err != nil {
		return st, err
	}
	by := Source(m)
	var root *url.URL
	if m.Root != "" {
		r, err := urlnorm.Normalize(m.Root)
		if err != nil {
			return st, fmt.Errorf("links message root %q: %w", m.Root, err)
		}
		root = r
	}
	// The URLs are independent: admit them at once, so their table writes share commits. Only
	// their budget is taken in turn: a URL reserves its page once the URL before it in the message
	// is done, so that a budget too small for the message goes to its first URLs (a page's links
	// in the page's order), as it would if they were admitted one by one.
	type result struct {
		p       pending
		outcome outcome
	}
	results := make([]result, len(m.URLs))
	var g errgroup.Group
	g.SetLimit(f.cfg.AdmitConcurrency)
	memory := 0 // links known from the warm cache alone, for crawl.dedup.hits
	before := closedTurn
	for i, raw := range m.URLs {
		if f.recentlyConfirmed(m.Crawl, raw) {
			results[i] = result{outcome: outKnown} // most links of a crawl: no goroutine for them
			memory++
			continue
		}
		after, done := before, make(chan struct{})
		before = done
		g.Go(func() error {
			defer close(done)
			p, o, err := f.admitOne(ctx, m, lim, by, root, raw, after)
			if err != nil {
				o = outFailed
			}
			p.msg.LastMod = m.LastModAt(i) // a sitemap's, for the recrawl (shared/crawl/recrawl)
			results[i] = result{p, o}
			return err
		})
	}
	admitErr := g.Wait()
	queued := make(map[string]int, len(m.URLs)) // key -> index in st.out, plus one
	for _, r := range results {
		p, outcome := r.p, r.outcome
		switch {
		case outcome == outSend && queued[p.key] > 0:
			st.Result.Known++ // the same URL twice in one message: this delivery admitted it if either did
			st.out[queued[p.key]-1].resent = st.out[queued[p.key]-1].resent && p.resent
		case outcome == outSend:
			st.out = append(st.out, p)
			queued[p.key] = len(st.out)
		case outcome == outKnown:
			st.Result.Known++
		case outcome == outRejected:
			st.Result.Rejected++
		case outcome == outInvalid:
			st.Result.Invalid++
		}
	}
	metrics.Admitted(ctx, len(st.out))
	metrics.DedupHits(ctx, "memory", memory)
	metrics.DedupHits(ctx, "table", st.Result.Known-memory)
	return st, admitErr
}

// closedTurn is the turn of the budget before a message's first URL: over.
var closedTurn = func() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

type outcome int

const (
	outSend outcome = iota
	outKnown
	outRejected
	outInvalid
	outFailed // the admission failed: the redelivery tries again
)

// admitOne admits one URL of m (raw, linked by the message named by), in the steps a link takes:
// normalized, looked up among the URLs known, checked against the crawl's rules and refusals,
// admitted in a group of the politeness slots, and given its page of the budgets.
func (f *Frontier) admitOne(ctx context.Context, m *message.Links, lim limits, by string, root *url.URL, raw string, budgetTurn <-chan struct{}) (pending, outcome, error) {
	u, err := urlnorm.Normalize(raw)
	if err != nil {
		f.log.Debug("dropping an invalid url", "url", raw, "err", err.Error())
		return pending{}, outInvalid, nil
	}
	norm := u.String()
	key := urlnorm.Key(norm)
	if known, err := f.knownSent(ctx, m.Crawl, key, norm, by); err != nil {
		return pending{}, 0, err
	} else if known {
		return pending{}, outKnown, nil
	}
	r := root
	if r == nil {
		r = u // a seed is its own scope root
	}
	if refused, err := f.refused(ctx, m, lim, r, u, key, norm); err != nil {
		return pending{}, 0, err
	} else if refused {
		return pending{}, outRejected, nil
	}
	groups := groupsIn(ctx)
	taken, place := groups.take(m.Crawl, u.Host, f.slots.Now(), func(k int) time.Time {
		return f.slots.SlotGuess(u.Host, lim.interval, f.cfg.SlotLead, k)
	})
	giveBack := func() { groups.give(m.Crawl, u.Host, taken) }
	res, group, err := f.admissions.AdmitIn(ctx, m.Crawl, taken, key, norm, r.String(), m.Depth, by)
	if res != crawlstate.Admitted || err != nil {
		giveBack()
	}
	if err != nil {
		return pending{}, 0, err
	}
	switch res {
	case crawlstate.Known:
		f.remember(m.Crawl, key, norm)
		return pending{}, outKnown, nil
	case crawlstate.Theirs:
		// Not remembered: if that message stopped before its send, its redelivery must find
		// the URL unsent here too, not in the memory of confirmed URLs.
		return pending{}, outKnown, nil
	case crawlstate.Admitted:
		if lim.maxPages > 0 || lim.maxPagesPerHost > 0 {
			<-budgetTurn // closed when the URL before it in the message is done
		}
		if over, err := f.reserve(ctx, m.Crawl, lim, u, group, key, norm, giveBack); err != nil {
			return pending{}, 0, err
		} else if over {
			return pending{}, outRejected, nil
		}
	}
	if res != crawlstate.Admitted {
		place = -1 // sent again in its old group, after the batch's own
	}
	return pending{crawl: m.Crawl, key: key, group: group, place: place, host: u.Host, interval: lim.interval, msg: message.Target{URL: norm, Root: r.String(),
		Depth: m.Depth, Sitemap: m.Sitemap, Group: group}, resent: res == crawlstate.Unsent}, outSend, nil
}

// knownSent says whether the URL is known and sent already, as far as the memory of URLs seen
// tells and, when it has seen the URL, the table confirms: a Bloom false positive, or an item
// the message by may not have sent, is left to the admission to decide.
func (f *Frontier) knownSent(ctx context.Context, crawl, key, norm, by string) (bool, error) {
	if !f.seen(crawl, key) {
		return false, nil
	}
	if f.recentlyConfirmed(crawl, norm) {
		return true, nil // confirmed by the table a moment ago
	}
	unsent, _, err := f.admissions.Unsent(ctx, crawl, key, by)
	switch {
	case err == nil && !unsent:
		return true, nil
	case err != nil && !errors.Is(err, table.ErrNotFound):
		return false, err
	}
	return false, nil
}

// refused says whether the URL u, linked from a page under root r, is refused before its
// admission: by the crawl's rules, the opt-out list, the crawl's age, its money budget, or its
// stop by its user. A refusal that holds whoever links the URL is recorded (skipped) and
// remembered.
func (f *Frontier) refused(ctx context.Context, m *message.Links, lim limits, r, u *url.URL, key, norm string) (bool, error) {
	if err := lim.rules.Check(r, u, m.Depth, f.now()); err != nil {
		if lim.rules.Check(u, u, 0, f.now()) == nil {
			// Out of scope from this root, or too deep on this path: another seed's page, or a
			// shorter path, may still bring the URL in. Nothing is recorded or remembered.
			return true, nil
		}
		// Refused whoever links it (an exclude pattern, a trap): recorded skipped, once.
		return true, f.reject(ctx, m, key, norm, err)
	}
	if f.optOuts != nil {
		e, out, err := f.optOuts.OptedOut(ctx, u)
		if err != nil {
			return false, err
		}
		if out {
			// On the opt-out list: recorded skipped, whichever crawl or link brings it.
			why := errclass.Errorf(errclass.OptedOut, "on the opt-out list (%s %s)", e.Kind, e.Value)
			return true, f.reject(ctx, m, key, norm, why)
		}
	}
	return f.crawlClosed(ctx, m, key, norm)
}

// crawlClosed says whether the crawl admits no more URLs: it is too old (the URL is recorded
// skipped), its money is spent, or its user stopped it (the link is only counted).
func (f *Frontier) crawlClosed(ctx context.Context, m *message.Links, key, norm string) (bool, error) {
	if err := f.gates.AdmissionOpen(ctx, m.Crawl); err != nil {
		if errclass.Of(err) != errclass.Scope {
			return false, err
		}
		// The crawl is too old to admit more: its items would expire too soon after.
		return true, f.reject(ctx, m, key, norm, err)
	}
	if err := f.gates.BudgetOpen(ctx, m.Crawl, f.cfg.BudgetUSD, f.cfg.Prices); err != nil {
		if errclass.Of(err) != errclass.Budget {
			return false, err
		}
		// The crawl's money is spent: a link is no longer admitted, only counted. What was admitted
		// before goes on to its end, and the crawl drains.
		return true, f.counters.CountBudgetRefusal(ctx, m.Crawl)
	}
	if run, err := f.gates.RunOf(ctx, m.Crawl); err != nil {
		return false, err
	} else if run == crawlstate.StoppedBy {
		// Stopped by its user (crawl stop): a link is counted, not admitted.
		return true, f.counters.CountStopRefusal(ctx, m.Crawl)
	}
	return false, nil
}

// reject records the URL skipped for why, and remembers it.
func (f *Frontier) reject(ctx context.Context, m *message.Links, key, norm string, why error) error {
	if _, err := f.skips.Reject(ctx, m.Crawl, key, norm, m.Depth, why); err != nil {
		return err
	}
	f.remember(m.Crawl, key, norm)
	return nil
}

// reserve reserves the admitted URL's page of the crawl's budgets (--max-pages,
// --max-pages-per-host). Over a budget, or in a trap, the URL is skipped in its group, which is
// given back (giveBack), and over is set.
func (f *Frontier) reserve(ctx context.Context, crawl string, lim limits, u *url.URL, group, key, norm string, giveBack func()) (over bool, err error) {
	err = f.pageBudget.ReserveBudget(ctx, crawl, u.Hostname(), lim.maxPages, lim.maxPagesPerHost)
	if err == nil {
		return false, nil
	}
	if c := errclass.Of(err); c == errclass.Budget || c == errclass.Trap {
		giveBack()
		if err := f.skips.SkipQueued(ctx, crawl, group, key, err); err != nil {
			return false, err
		}
		f.remember(crawl, key, norm)
		return true, nil
	}
	// A backend failure: take the admission back, so that the redelivered message admits
	// the URL afresh and reserves its budget then (an unsent item would skip that). A
	// concurrent delivery of the same message may have sent the URL meanwhile: its fetch
	// message finds no item and is dropped (the fetcher), and the URL is not remembered
	// there (resent), so the redelivery admits it here again. The group is not given
	// back: its tombstone would drop the URL if a link of this batch admitted it there.
	if uerr := f.admissions.Unadmit(ctx, crawl, group, key); uerr != nil {
		f.log.Warn("take back an admission", "url", norm, "err", uerr.Error())
	}
	return false, err
}

// Source names the Links message m in the items it admits: a digest of its content, so the same
// for every delivery of it (SQS may deliver a message twice, and a redrive may give it a new
// id) and different for different messages. Two messages with the same content share a name,
// which costs at most a duplicate fetch message that the claim drops.
func Source(m *message.Links) string {
	h := sha256.New()
	for _, s := range []string{m.Crawl, m.Root, m.Parent, strconv.Itoa(m.Depth)} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	for _, u := range m.URLs {
		h.Write([]byte(u))
		h.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:12])
}

// Flush writes the crawl counters buffered since the last Flush (see crawlstate.Store.Flush).
func (f *Frontier) Flush(ctx context.Context) error { return f.counters.Flush(ctx) }

// Start records that the crawl started now, unless its start is on record already: its items
// live, and it admits URLs, for a time counted from then (crawlstate.AdmissionOpen).
func (f *Frontier) Start(ctx context.Context, crawl string) error {
	return f.starts.MarkStarted(ctx, crawl)
}
