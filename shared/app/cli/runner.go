package cli

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/crawlstack/crawlstack/shared/app/pipeline"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/local/localrun"
	"github.com/crawlstack/crawlstack/shared/observe/ledger"
	"github.com/crawlstack/crawlstack/shared/observe/telemetry"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// runPauseWait is how long a paused crawl's fetch messages wait between looks under crawl run.
const runPauseWait = 5 * time.Second

// budgetCheck is how often crawl run reads its crawl's ledger against --budget-usd: the ledger is
// 129 items, a read unit each, and its counters are written every counterInterval.
const budgetCheck = time.Second

// bookCosts adds what each of the runner's invocations is metered for to its crawls' ledgers (the
// AWS backend's SDK calls, and the runner's receives and deletes of each batch, with its pollers'
// receives that found nothing between batches; no Lambda bills a local run), so that a budget can
// stop the crawl. Each source has a ledger of its own, which knows how its queue is polled.
func bookCosts(r *localrun.Runner, st *crawlstate.Store, log *slog.Logger) {
	for i, s := range r.Sources {
		l := &ledger.Ledger{State: st, Polled: true, Pollers: max(s.Pollers, 1), PollWait: s.PollWait(), Log: log}
		r.Sources[i].Handler = localrun.Invoke(l.Wrap(ledger.Handler(s.Handler)))
	}
}

// releaseBudgets gives back to the table the pages of the crawls' budgets (--max-pages) that this
// run took and did not use, once its handlers are done: the next run can use them.
func releaseBudgets(ctx context.Context, st *crawlstate.Store, log *slog.Logger) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := st.ReleaseBudgets(wctx); err != nil {
		log.Warn("give the unused pages of the budget back", "err", err.Error())
	}
}

// counterInterval is how often crawl run writes the crawl counters its handlers buffer.
const counterInterval = 100 * time.Millisecond

// holdCounters writes the counter increments that every handler of this process buffers and holds
// (pipeline.Config.HoldCounters) every interval instead of at the end of each invocation: one
// write where thousands of batches each made their own, on the way between two invocations. The
// returned function writes what is left, also after an interrupt, and returns an error if it
// could not.
func holdCounters(ctx context.Context, st *crawlstate.Store, interval time.Duration, log *slog.Logger) func() error {
	stop := localrun.Every(ctx, interval, func() {
		if err := st.WriteCounters(ctx); err != nil && ctx.Err() == nil {
			log.Warn("write the crawl counters", "err", err.Error())
		}
	})
	return func() error {
		stop()
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		err := st.WriteCounters(wctx)
		if err != nil {
			log.Warn("write the crawl counters", "err", err.Error())
		}
		return err
	}
}

// NewRunner plays Lambda's event source mappings for the three handlers: about concurrency
// fetches in flight, in batches of up to 10. A fetch batch records its pages together at its end,
// and its GETs are done while it does: so fetch runs fetchSets times as many batches as
// concurrency needs, and the HTTP client keeps at most concurrency GETs in flight over all of
// them (the run's Config.FetchInFlight). With one set of batches, a crawl of a site that answers
// in 50 ms had 19 to 21 of its 32 fetches in flight on average, at 0.60x to 0.67x of the pages/s
// of a client that GETs the known URL list; with two, 25 to 26, at 0.78x to 0.83x
// (docs/bench-history.md, round ten). At most about fetchSets x concurrency pages are fetched but
// not yet recorded at any moment: the most a crash can make the next run fetch again. A batch that has recorded its pages
// and only waits for its file's sync lends its turn to a spare (fetchSpares): on a busy disk a
// 5,000-page crawl at 50 ms took 9.3 to 10.7 s instead of 10.4 to 11.7 s, and the same as before
// on a quiet one (docs/bench-history.md, round sixteen).
//
// Unlike the stack, schedule and parse also take batches of up to 10, with no batching window:
// on the embedded backend a batch costs no billed request, and `make bench` was no faster with
// schedule and parse batches of 32 gathered for 20 ms (0.95x and 1.04x of Colly's pages/s in two
// sets of 3 runs, against 1.07x and 1.10x with these), though its peak memory was lower.
func NewRunner(q localrun.Queues, res Resources, h *pipeline.Handlers, concurrency int, visibility time.Duration, log *slog.Logger) *localrun.Runner {
	sets := fetchSets(h.HostRPS)
	pollers := (concurrency + queue.MaxBatch - 1) / queue.MaxBatch
	batch := (concurrency + pollers - 1) / pollers // so pollers x batch stays close to concurrency
	src := func(name, q string, inv localrun.Invoke, n int) localrun.Source {
		inv = telemetry.Invocation(nil, name, inv) // a span per batch, as per Lambda invocation
		return localrun.Source{Name: name, Queue: q, Handler: inv, Pollers: n, BatchSize: batch, Visibility: visibility}
	}
	fetch := src("fetch", res.Fetch, h.Fetch.Handle, max(sets, 1)*pollers)
	fetch.Spare = fetch.Pollers * fetchSpares(h.HostRPS)
	sources := []localrun.Source{
		src("schedule", res.Schedule, h.Schedule.Handle, max(2, pollers/2)),
		fetch,
		src("parse", res.Parse, h.Parse.Handle, max(2, pollers/2)),
	}
	if h.FetchSlow != nil && res.FetchSlow != "" {
		// The slow lane: runs of polite hosts, which wait in place for their slots. As many pollers
		// as fetch's, so that a run never waits behind another for a handler.
		sources = append(sources, src("fetchslow", res.FetchSlow, h.FetchSlow.Handle, fetch.Pollers))
	}
	if h.Render != nil && res.Render != "" {
		// A browser renders a page in about a second: two pollers keep it busy without a second
		// browser's memory.
		sources = append(sources, src("render", res.Render, h.Render.Handle, 2))
	}
	return &localrun.Runner{Queues: q, Log: log, Sources: sources}
}

// fetchSets is how many sets of fetch batches NewRunner runs: two without a per-host rate, one
// with it. With a rate (8 per second in TestTransientFaultsDuringARunThatFinishes, which also
// delivers every message twice), two sets left hundreds of fetch messages re-queued for later
// politeness slots after every URL of the crawl was done, and the run did not end in 2 minutes
// (with one set: 30 s). With a rate the host's slots, not the fetches in flight, bound a crawl.
func fetchSets(hostRPS float64) int {
	if hostRPS > 0 {
		return 1
	}
	return 2
}

// fetchSpares is how many spare fetch handler loops NewRunner runs for each fetch poller: they take
// batches only while fetch batches wait for their WARC files' syncs (localrun.Source.Spare). None
// with a per-host rate, for the reason fetchSets gives.
func fetchSpares(hostRPS float64) int {
	if hostRPS > 0 {
		return 0
	}
	return 1
}

// signalContext ends on SIGINT or SIGTERM.
func signalContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}
