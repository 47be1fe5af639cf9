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
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/optout"
	"github.com/crawlstack/crawlstack/shared/crawl/priority"
	"github.com/crawlstack/crawlstack/shared/crawl/scope"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/port/queue"
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
	// SlowQueue, if set, is the slow lane's queue (the fetchslow function's): the runs of polite
	// hosts go there, and every other fetch message to FetchQueue. Empty: all go to FetchQueue.
	SlowQueue string
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
	// the host's next ones (crawlstate.Hosts.BookSlots): 0 is DefaultSpareSlots, below 0 none.
	SpareSlots int
	// RunURLs is how many URLs of one polite host a fetch message carries at most, one after
	// another in the host's slots (runs.go), up to message.MaxFetchURLs: 0, 1 or below 0 is none
	// (each message then holds one URL of each host), the default; DefaultRunURLs is the length
	// measured, which the stack's runUrls=10 sets with its slow lane (SlowQueue), where runs do not
	// hold up fetch's invocations (docs/cost.md, "The slow lane").
	RunURLs int
	// RunMinInterval is the gap between a host's requests from which its URLs go in runs: 0 is
	// DefaultRunMinInterval.
	RunMinInterval time.Duration
	// RunSpan bounds the time from a run's first slot to its last: 0 is DefaultRunSpan.
	RunSpan time.Duration
}

// Deps are what a Frontier works with. The crawl state's capabilities (state.go) are each a
// field: crawlstate.Store gives them all, and each of its URLs, Hosts and Runs some.
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
	// crawl is the crawl's settings (nil: the stack's), whose host rules may set a host's rate.
	crawl *crawlspec.Crawl
	// priority orders each message's URLs for their admission (nil: the message's order).
	priority *priority.Ranker
}

// intervalOf is the gap between host's requests: its host rule's rate, or the crawl's.
func (l limits) intervalOf(host string) time.Duration {
	if l.crawl != nil {
		if rps, ok := l.crawl.RuleRate(host); ok {
			return crawlstate.IntervalOf(rps)
		}
	}
	return l.interval
}

// limitsOf returns crawl's admission settings.
func (f *Frontier) limitsOf(ctx context.Context, crawl string) (limits, error) {
	if f.crawls == nil {
		return limits{f.cfg.Rules, f.cfg.MaxPages, f.cfg.MaxPagesPerHost, f.cfg.HostInterval, nil, nil}, nil
	}
	c, err := f.crawls.For(ctx, crawl)
	if err != nil {
		return limits{}, err
	}
	interval := f.cfg.HostInterval
	if c.Spec != nil && c.Spec.Rate != nil {
		interval = crawlstate.IntervalOf(c.HostRPS)
	}
	return limits{c.Rules, c.MaxPages, c.MaxPagesPerHost, interval, c, c.Priority}, nil
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
	cfg.RunURLs = min(cfg.RunURLs, message.MaxFetchURLs)
	if cfg.RunMinInterval <= 0 {
		cfg.RunMinInterval = DefaultRunMinInterval
	}
	if cfg.RunSpan <= 0 {
		cfg.RunSpan = DefaultRunSpan
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
	// run: the URL's group is a run of its host's (runs.go).
	run bool
	msg message.Target
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
	name  string // the message's Source
	out   []pending
	// Result counts what admission did; Send adds the URLs it sent.
	Result Result
}

// Crawl is the crawl of the staged message.
func (s *Staged) Crawl() string { return s.crawl }

// Name is the staged message's Source.
func (s *Staged) Name() string { return s.name }

// Stage admits the URLs of one Links message, and returns the fetch messages left to send. It
// returns an error (and the caller retries the whole message) when the table failed; the URLs
// admitted all the same are in the Staged, to be sent: a URL that fails stops no other, and the
// redelivery of m redoes only the rest (the sent ones are known to this frontier by then), so a
// message of many links gets through a table that fails now and then.
func (f *Frontier) Stage(ctx context.Context, m *message.Links) (*Staged, error) {
	st := &Staged{crawl: m.Crawl, name: Source(m)}
	if _, ok := ctx.Value(groupsKey{}).(*groups); !ok {
		ctx = WithGroups(ctx) // a message staged alone has groups of its own
	}
	lim, err := f.limitsOf(ctx, m.Crawl)
	if err != nil {
		return st, err
	}
	by := st.name
	var root *url.URL
	if m.Root != "" {
		r, err := urlnorm.Normalize(m.Root)
		if err != nil {
			return st, fmt.Errorf("links message root %q: %w", m.Root, err)
		}
		root = r
	}
	// The URLs are independent: admit them at once, so their table writes share commits. Only
	// their budget is taken in turn: a URL reserves its page once the URL before it is done, so
	// that a budget too small for the message goes to its first URLs, as it would if they were
	// admitted one by one: in the crawl's priority order (high first), and in the message's (a
	// page's links in the page's order) among URLs of one priority. Their fetch messages are sent
	// in that order too.
	order := lim.priority.Order(m.URLs, m.Parent, m.Depth)
	type result struct {
		p       pending
		outcome outcome
	}
	results := make([]result, len(m.URLs))
	var g errgroup.Group
	g.SetLimit(f.cfg.AdmitConcurrency)
	memory := 0 // links known from the warm cache alone, for the dedup breakdown (metrics.DedupHits)
	before := closedTurn
	ls := links(m, order, func(raw string) bool { return f.recentlyConfirmed(m.Crawl, raw) })
	for _, i := range order {
		if ls[i].known {
			results[i] = result{outcome: outKnown} // most links of a crawl: no goroutine for them
			memory++
			continue
		}
		after, done := before, make(chan struct{})
		before = done
		g.Go(func() error {
			defer close(done)
			p, o, err := f.admitOne(ctx, m, lim, by, root, ls[i], after)
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
	for _, i := range order {
		p, outcome := results[i].p, results[i].outcome
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

// Flush writes the crawl counters buffered since the last Flush (see crawlstate.Runs.Flush).
func (f *Frontier) Flush(ctx context.Context) error { return f.counters.Flush(ctx) }

// Start records that the crawl started now, unless its start is on record already: it admits URLs
// for a time counted from then, or from its items' last renewal (crawlstate.AdmissionOpen).
func (f *Frontier) Start(ctx context.Context, crawl string) error {
	return f.starts.MarkStarted(ctx, crawl)
}
