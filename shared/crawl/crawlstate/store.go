package crawlstate

import (
	"sync"
	"time"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// keeper is a table that says whether it keeps items past their time to live: the embedded
// table has no TTL (package sqlite). A table that does not say is taken to delete them.
type keeper interface{ KeepsItems() bool }

// base is what every part of a store is built on, shared: the one table, and the one clock.
type base struct {
	t table.Table
	// now is the clock (WithClock).
	now func() time.Time
}

// Now is the time on the store's clock (WithClock): the time its slots, leases and circuits are
// reckoned in.
func (b *base) Now() time.Time { return b.now() }

// counts writes a crawl's counter shards (countwrite.go), for every part of a store: one writer,
// with one sequence of writes for each crawl, whichever part counts.
type counts struct {
	*base
	// bufferCounters keeps counter increments in memory until Flush, one write per crawl instead
	// of one per transition (WithBufferedCounters). Handlers flush at the end of every invocation.
	bufferCounters bool
	// holdCounters, with bufferCounters, makes Flush keep the increments for WriteCounters, which
	// the process that owns the store calls on its own schedule (WithHeldCounters). crawl run holds
	// them: its handlers all share one store, so it writes them every 100 ms and at the end rather
	// than at the end of each of thousands of invocations. A Lambda function must not: a frozen
	// container keeps them.
	holdCounters bool
	// writer names this store in the counter shards it writes, and counterLogs holds, for each
	// crawl, its shard and its writes' sequence (countwrite.go).
	writer      string
	counterLogs sync.Map // crawl -> *counterLog

	mu      sync.Mutex
	pending map[string]map[string]int64 // crawl -> counter -> increment, when buffering
}

// Hosts is the state of each host that every crawl and worker shares: its politeness slot
// (slots.go, spare.go), its circuit (circuit.go, circuitnotes.go), its throttled gap (throttle.go,
// throttled.go) and the usual time of its answers. Its items are in the p# partitions (keys.go);
// what a crawl saw of a host is noted in the crawl's counter shards. It is safe for concurrent use.
type Hosts struct {
	*base
	counts *counts
	// circuitFailures and circuitProbe: see WithCircuit.
	circuitFailures int
	circuitProbe    time.Duration

	slotSeen  sync.Map // host -> the next free politeness slot this store last wrote or saw (int64 ms)
	spare     sync.Map // spareKey -> *spares, the host's slots booked and not yet given out (BookSlots)
	throttles sync.Map // host -> its throttled gap as this store last saw it (throttle)
	circuits  sync.Map // host -> its circuit as this store last saw it (circuit)
	answers   answerTimes
}

// Runs is the state of each crawl as a whole: its crawl item in the k# partitions, with its run
// state (run.go), its start, renewal and expiry (life.go, renew.go, expiry.go), its chain of checks
// and its end (finish.go), its ledger (ledger.go) and its page budget (block.go, budget.go,
// giveback.go); and its counter shards (counters.go, countwrite.go), which every part writes. It is
// safe for concurrent use.
type Runs struct {
	*base
	*counts
	// costCheck is how often BudgetOpen reads a crawl's ledger (0: DefaultCostCheck).
	costCheck time.Duration
	// metricSeries are the custom metric series a budget counts for the crawl's time
	// (WithMetricSeries).
	metricSeries int
	// runCheck is how long RunOf keeps a crawl's run state (0: DefaultRunCheck; below 0: not at all).
	runCheck time.Duration
	// retention is how long a crawl's items live after their last write or renewal before the
	// table's TTL may delete them (see life.go and renew.go): DefaultRetention.
	retention time.Duration
	// kept is whether the table keeps items past their expiry (keeper): then no item expires
	// under a crawl, which needs no renewal and admits for as long as it runs.
	kept bool

	starts   sync.Map // crawl -> its start (time.Time; zero when none is on record)
	spent    sync.Map // crawl -> *spent, its ledger as last read (see BudgetOpen)
	runs     sync.Map // crawl -> *runSeen, its run state as last read (see RunOf)
	renewals sync.Map // crawl -> renewSeen, its last renewal as last read (see AdmissionOpen)
	budgets  sync.Map // budget item key -> *blockBudget, this store's block of that budget
}

// URLs is the state of each URL of a crawl, in the crawl's partitions: its item, written at its
// admission (crawlstate.go), and its group's item with its claim and outcome (claim.go,
// outcomes.go, reopen.go); the parse marks and Links items (parsed.go, links.go, endcount.go); and
// the reads and tallies of them all (read.go, tally.go, erase.go). A URL's item lives as long as
// its crawl (crawls: its expiry), and its transitions are counted in the crawl's counter shards.
// It is safe for concurrent use.
type URLs struct {
	*base
	counts *counts
	crawls *Runs
	// recent are the Links messages' names this store counted lately (endcount.go).
	recent recentNames
	// tallyItems bounds the items one step of a resumable tally reads (WithTallyStepItems).
	tallyItems int64
}

// Store is the crawl state on a table: its URLs, Hosts and Runs, over one table and one clock,
// each with the settings that concern it. It is safe for concurrent use. Its settings are given
// to New as options (options.go), and none changes once the store is built.
type Store struct {
	*base
	*URLs
	*Hosts
	*Runs
}

// DefaultRetention is how long a crawl's items live after their last write or renewal (life.go).
const DefaultRetention = 30 * 24 * time.Hour

// New returns a Store on t with DefaultRetention, and the options applied in order.
func New(t table.Table, opts ...Option) *Store {
	o := settings{now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	b := &base{t: t, now: o.now}
	c := &counts{base: b, bufferCounters: o.bufferCounters, holdCounters: o.holdCounters, writer: newWriter()}
	h := &Hosts{base: b, counts: c, circuitFailures: o.circuitFailures, circuitProbe: o.circuitProbe}
	r := &Runs{base: b, counts: c, costCheck: o.costCheck, metricSeries: o.metricSeries, runCheck: o.runCheck, retention: DefaultRetention}
	if k, ok := t.(keeper); ok {
		r.kept = k.KeepsItems()
	}
	u := &URLs{base: b, counts: c, crawls: r, tallyItems: o.tallyItems}
	return &Store{base: b, URLs: u, Hosts: h, Runs: r}
}
