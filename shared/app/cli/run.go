// Package cli is the `crawl` command: `crawl run` crawls a seed file on the embedded backend (or
// on AWS), `crawl demo` serves a generated site on loopback and crawls it, and `crawl redrive`
// moves a dead-letter queue's messages back. Main is what cmd/crawl calls and what the
// end-to-end tests drive.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/crawlstack/crawlstack/shared/aws/eventbus"
	"github.com/crawlstack/crawlstack/shared/crawl/cost"

	"github.com/crawlstack/crawlstack/shared/app/pipeline"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/finish"
	"github.com/crawlstack/crawlstack/shared/crawl/secretref"
	"github.com/crawlstack/crawlstack/shared/handler/scheduler"
	"github.com/crawlstack/crawlstack/shared/local/gctune"
	"github.com/crawlstack/crawlstack/shared/local/handoff"
	"github.com/crawlstack/crawlstack/shared/observe/telemetry"
)

// Exit codes.
const (
	ExitOK          = 0
	ExitFailed      = 1
	ExitUsage       = 2
	ExitInterrupted = 130
)

// GaveUp is a URL the crawl failed, and why.
type GaveUp struct {
	URL    string `json:"url"`
	Class  string `json:"class"`
	Detail string `json:"detail,omitempty"`
}

// Counts are a crawl's URLs by state and class, as a run's summary and crawl status show them
// (the same JSON fields in both).
type Counts struct {
	Seen        int64 `json:"seen"`
	Fetched     int64 `json:"fetched"`
	Skipped     int64 `json:"skipped"`
	Failed      int64 `json:"failed"`
	StoppedURLs int64 `json:"stoppedUrls"`
	// StopRefused are the links a stopped crawl did not admit (no URL: not in Seen).
	StopRefused int64 `json:"stopRefusedLinks,omitempty"`
	// RobotsRefused are the links parse dropped because their host's robots.txt refuses them (no
	// URL: not in Seen, nor in the robots class, which counts the URLs the fetcher skipped).
	RobotsRefused int64 `json:"robotsRefusedLinks,omitempty"`
	Pending       int64 `json:"pending"`
	ParseErrors   int64 `json:"parseErrors"`
	// PagesPerSecond is the fetched pages per second: over the run in a summary, over the time
	// since the crawl started in a status.
	PagesPerSecond float64          `json:"pagesPerSecond"`
	Classes        map[string]int64 `json:"classes"`
	// Responses are the URLs by HTTP status, the bytes fetched, and a recrawl's changed and
	// unchanged pages, as the crawl's end event counts them.
	Responses finish.Responses `json:"responses"`
}

// countsOf are the counts of c.
func countsOf(c crawlstate.Counters) Counts {
	n := Counts{Seen: c.Seen, Fetched: c.Fetched, Skipped: c.Skipped, Failed: c.Failed, StoppedURLs: c.StoppedURLs,
		StopRefused: c.StopRefused, RobotsRefused: c.RobotsRefused, Pending: c.Pending(), ParseErrors: c.ParseErrors, Classes: map[string]int64{},
		Responses: finish.ResponsesOf(c.Responses)}
	for cl, k := range c.Classes {
		n.Classes[string(cl)] = k
	}
	return n
}

// classLine is the counts by class, in name order: "robots 1, timeout 2".
func classLine(classes map[string]int64) string {
	names := make([]string, 0, len(classes))
	for c := range classes {
		names = append(names, c)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, c := range names {
		parts[i] = fmt.Sprintf("%s %d", c, classes[c])
	}
	return strings.Join(parts, ", ")
}

// Summary is the result of a run, printed as text and, with --json, as the one JSON document on stdout.
type Summary struct {
	Crawl    string `json:"crawl"`
	Finished bool   `json:"finished"`
	// Also are the summaries of the other crawls this run advanced: unfinished crawls of the same
	// state, whose messages it took from the queues too.
	Also []Summary `json:"also,omitempty"`
	// AlreadyEnded is set when the crawl had ended before this run, which only showed it.
	AlreadyEnded   bool    `json:"alreadyEnded,omitempty"`
	ElapsedSeconds float64 `json:"elapsedSeconds"`
	Counts
	// FetchedThisRun are the pages this run fetched (PagesPerSecond is their rate).
	FetchedThisRun int64 `json:"fetchedThisRun"`
	BadSeedLines   int   `json:"badSeedLines"`
	// Pages and Records are where the crawl's WARC files and records are; empty when it stored none.
	Pages   string `json:"pages,omitempty"`
	Records string `json:"records,omitempty"`
	// GaveUp lists some of the failed URLs (crawlstate.MaxGaveUp at most), with why.
	GaveUp []GaveUp `json:"gaveUp,omitempty"`
	// Throttled are the hosts whose gap the crawl widened after their 429s, failures in a row or
	// slow answers, with their gap now.
	Throttled []Throttled `json:"throttled,omitempty"`
	// Circuits are the hosts whose circuit the crawl opened after their failures in a row.
	Circuits    []Circuit      `json:"circuits,omitempty"`
	DeadLetters map[string]int `json:"deadLetters"`
	// CostUSD is the crawl's ledger priced, on a metered backend (--backend aws).
	CostUSD float64 `json:"costUsd,omitempty"`
	// BudgetUSD is --budget-usd; Stopped says "budget" when the crawl reached it.
	BudgetUSD float64 `json:"budgetUsd,omitempty"`
	Stopped   string  `json:"stopped,omitempty"`
	// Event is the crawl's end as announced (package finish), once the crawl has finished.
	Event *finish.Event `json:"event,omitempty"`

	eventFile     string              // where Event was written
	prices        cost.Prices         // what CostUSD is costed at
	fetchedBefore int64               // the pages the crawl had fetched before this run
	tally         crawlstate.Counters // the exact counts the summary shows (crawlstate.Tally)
}

// crawlRun runs one crawl of o.SeedFile and returns its summary.
func crawlRun(ctx context.Context, o RunOptions, stdout, stderr io.Writer) (Summary, int) {
	sum, body, code := checkRun(o, stderr)
	if code != ExitOK {
		return sum, code
	}
	env, closeRun, code := openRun(ctx, o, body, stderr)
	defer closeRun()
	if code != ExitOK {
		return sum, code
	}
	if o.SeedFile == "" {
		return goOn(ctx, o, env.be, env.res, env.h, env.log, sum, stdout, stderr)
	}
	p, others, code := pickRunCrawl(ctx, o, env, body, stderr)
	if code != ExitOK {
		return sum, code
	}
	sum.Crawl, sum.fetchedBefore = p.id, p.fetched
	if p.ended {
		return showEnded(ctx, o, env, sum, stdout, stderr)
	}
	if err := startSeed(ctx, env.be, env.res, p.key, p.version, body); err != nil {
		fmt.Fprintf(stderr, "crawl: %v\n", err)
		return sum, ExitFailed
	}
	out := runCrawl(ctx, o, env, p, stderr)
	return reportRun(ctx, o, env, sum, others, out, stdout, stderr)
}

// runEnv is what a run works with once its backend is set up: the adapters, the queues, the
// handlers in this process, and the log.
type runEnv struct {
	be  *Backend
	res Resources
	h   *pipeline.Handlers
	log *slog.Logger
}

// checkRun checks what a run is given before it reads or creates anything: the flags, the seed
// file, the price table, and, without a seed file, a state to go on with. It returns the summary
// as far as it has filled it, and the seed file.
func checkRun(o RunOptions, stderr io.Writer) (sum Summary, body []byte, code int) {
	// Bad flags are reported before anything is read or created (checkRunFlags has said what is
	// wrong with each): the pipeline's own check, with stand-in queue names, is a backstop.
	if err := o.config(Resources{Schedule: "schedule", Fetch: "fetch", Parse: "parse"}).Validate(); err != nil {
		fmt.Fprintf(stderr, "crawl: bad flags:\n%v\n", err)
		return sum, nil, ExitUsage
	}
	if o.SeedFile != "" {
		var err error
		if body, err = os.ReadFile(o.SeedFile); err != nil {
			fmt.Fprintf(stderr, "crawl: cannot read the seed file: %v\n", err)
			return sum, nil, ExitUsage
		}
		good, bad, code := readSeeds(o, body, stderr)
		if code != ExitOK {
			return sum, nil, code
		}
		sum.BadSeedLines = bad
		if good == 0 {
			fmt.Fprintf(stderr, "crawl: %s has no valid seed URL (%d bad lines): nothing to crawl\n", o.SeedFile, bad)
			return sum, nil, ExitUsage
		}
	}
	sum.BudgetUSD = o.BudgetUSD
	var err error
	if sum.prices, err = o.config(Resources{}).PriceTable(); err != nil {
		fmt.Fprintf(stderr, "crawl: --prices: %v\n", err)
		return sum, nil, ExitUsage
	}
	if o.SeedFile == "" {
		if _, err := os.Stat(filepath.Join(o.State, stateFile)); err != nil {
			fmt.Fprintf(stderr, "crawl run: no SEEDFILE, and no crawl state in %s to go on with: give a SEEDFILE (crawl run --help)\n", o.State)
			return sum, nil, ExitUsage
		}
	}
	return sum, body, ExitOK
}

// openRun starts the run's telemetry, opens and locks its backend, sets up its queues and builds
// its handlers. closeRun undoes what it did, last first, also when it failed half way: the caller
// defers it either way.
func openRun(ctx context.Context, o RunOptions, body []byte, stderr io.Writer) (env runEnv, closeRun func(), code int) {
	var undo []func()
	closeRun = func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	tel, err := telemetry.Setup(ctx, os.Getenv, telemetry.Options{Service: "crawlstack-run", Endpoint: o.OTel})
	if err != nil {
		fmt.Fprintf(stderr, "crawl: --otel: %v\n", err)
		return env, closeRun, ExitUsage
	}
	undo = append(undo, func() { tel.Shutdown(context.WithoutCancel(ctx)) })
	fetching := warmRobots(ctx, o, body) // while the state opens
	if fetching != nil {
		undo = append(undo, fetching.Close)
	}
	be, err := openBackend(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "crawl: %v\n", err)
		return env, closeRun, ExitFailed
	}
	undo = append(undo, func() { be.Close() })
	if be.SyncsFiles {
		undo = append(undo, spareProc())
	}
	undo = append(undo, gctune.Start()) // less collection for some memory (docs/bench-history.md, round fifteen)
	if o.Backend == "embedded" {
		unlock, err := lockState(o.State)
		if err != nil {
			fmt.Fprintf(stderr, "crawl: %v\n", err)
			return env, closeRun, ExitFailed
		}
		undo = append(undo, unlock)
	}
	if be.Existing != nil {
		fmt.Fprintln(stderr, "crawl: using the queues of a deployed stack: its Lambda functions consume them too, so they share this crawl's work")
	}
	res, err := be.Setup(ctx, QueueSettings{Visibility: o.Visibility, MaxReceiveCount: o.MaxReceive})
	if err != nil {
		fmt.Fprintf(stderr, "crawl: set up the %s backend: %v\n", be.Name, err)
		return env, closeRun, ExitFailed
	}
	if err := reclaimInFlight(ctx, o, be, stderr); err != nil {
		fmt.Fprintf(stderr, "crawl: %v\n", err)
		return env, closeRun, ExitFailed
	}
	logger, _ := o.Log.Logger(stderr) // checked with the flags
	log := slog.New(interruptQuiet{Handler: logger.Handler(), ctx: ctx})
	// Fetch and parse run in this process, so parse takes the pages fetch has just stored from memory.
	cfg := o.config(res)
	cfg.HoldCounters = true // holdCounters writes them
	if be.Metered {
		cfg.CostCheck = budgetCheck
	}
	names := []string{pipeline.Schedule, pipeline.Fetch, pipeline.Parse}
	if res.Render != "" {
		names = append(names, pipeline.Render)
	}
	if res.FetchSlow != "" {
		names = append(names, pipeline.FetchSlow)
	}
	browser, closeBrowser := openBrowser(o.Chromium, log)
	undo = append(undo, closeBrowser)
	h, err := pipeline.NewOnly(cfg, pipeline.Ports{Queue: be.Queue, Table: be.Table, Blobs: be.Blobs,
		Handoff: handoff.New(handoff.DefaultMaxBytes, handoff.DefaultMaxAge), Events: eventbus.BlobPublisher{Blobs: be.Blobs},
		Fetching: fetching, Secrets: secretref.Local{AWS: be.Secrets}, Browser: browser}, log, names...)
	if err != nil {
		fmt.Fprintf(stderr, "crawl: %v\n", err)
		return env, closeRun, ExitUsage
	}
	undo = append(undo, h.Close)
	return runEnv{be: be, res: res, h: h, log: log}, closeRun, ExitOK
}

// reclaimInFlight takes back, on the embedded backend, the messages that a run which did not end
// cleanly had in flight, and says how many there were.
func reclaimInFlight(ctx context.Context, o RunOptions, be *Backend, stderr io.Writer) error {
	r, ok := be.Queue.(reclaimer)
	if !ok || o.Backend != "embedded" {
		return nil
	}
	n, err := r.ReclaimInFlight(ctx)
	if err != nil {
		return err
	}
	if n > 0 {
		fmt.Fprintf(stderr, "crawl: took back %d messages that a run which did not end cleanly (killed?) had in flight\n", n)
	}
	return nil
}

// pickRunCrawl chooses the crawl of the seed file the run goes on with (package which), brings
// its counts and its refused links up to date on the embedded backend, finds the other unfinished
// crawls the run advances too, and prints the note about that choice.
func pickRunCrawl(ctx context.Context, o RunOptions, env runEnv, body []byte, stderr io.Writer) (p pick, others []Summary, code int) {
	be, h := env.be, env.h
	key, version := seedObject(be, filepath.Base(o.SeedFile), body)
	if o.Name != "" {
		key, version = namedObject(be, o.Name)
	}
	var pointers scheduler.PointerReader
	if !crawlspec.IsSpec(key, body) && o.Name == "" {
		pointers = be.Blobs
	}
	p, err := chooseCrawlOf(ctx, h.State, pointers, be.Bucket, key, version, o.Fresh)
	if err != nil {
		fmt.Fprintf(stderr, "crawl: %v\n", err)
		return p, nil, ExitFailed
	}
	if be.Name == "embedded" && !p.ended && p.fetched > 0 {
		// The counters miss the pages a killed run recorded but had not counted yet: this run's
		// count of its own pages starts from the exact one (a scan is a local query here).
		c, err := h.State.Tally(ctx, p.id)
		if err != nil {
			fmt.Fprintf(stderr, "crawl: %v\n", err)
			return p, nil, ExitFailed
		}
		p.fetched = c.Fetched
	}
	if be.Name == "embedded" {
		if err := reconsiderRefused(ctx, be, env.res, h.State, o, body, &p); err != nil {
			fmt.Fprintf(stderr, "crawl: %v\n", err)
			return p, nil, ExitFailed
		}
	}
	if be.Name == "embedded" && !p.ended {
		if others, err = unfinishedOthers(ctx, h.State, p.id); err != nil {
			fmt.Fprintf(stderr, "crawl: %v\n", err)
			return p, nil, ExitFailed
		}
	}
	if len(others) > 0 {
		ids := make([]string, len(others))
		for i, a := range others {
			ids[i] = a.Crawl
		}
		p.note += fmt.Sprintf("; unfinished crawl%s %s %s here too: their messages share the queues, so this run advances them as well",
			map[bool]string{true: "s"}[len(others) > 1], strings.Join(ids, ", "), map[bool]string{true: "are", false: "is"}[len(others) > 1])
	}
	if p.created {
		if d := o.config(Resources{}).UnlikeTheStack(); len(d) > 0 {
			p.note += " (unlike a deployed stack's defaults: " + strings.Join(d, "; ") + ")"
		}
	}
	fmt.Fprintf(stderr, "crawl: %s\n", p.note)
	return p, others, ExitOK
}

// showEnded shows the summary of a crawl that had ended before this run, and announces its end
// if a run that died before announcing it left that to this one.
func showEnded(ctx context.Context, o RunOptions, env runEnv, sum Summary, stdout, stderr io.Writer) (Summary, int) {
	sum, err := summarize(ctx, env.h.State, env.be, env.res, sum.Crawl, time.Now(), sum, false)
	if err != nil {
		fmt.Fprintf(stderr, "crawl: summary: %v\n", err)
		return sum, ExitFailed
	}
	sum.Finished, sum.AlreadyEnded = true, true
	announced := announceEnd(ctx, env.h, env.be, &sum, stderr)
	printSummary(stdout, stderr, sum, o.JSON, hintsOf(o))
	if !announced {
		return sum, ExitFailed
	}
	return sum, ExitOK
}

// runOutcome is how a run's handlers ended: what its report needs.
type runOutcome struct {
	start time.Time
	err   error
	// exact says that every transition of the crawl was counted (crawlstate.Tally is not needed).
	exact bool
	// cutShort are the batches a graceful stop cut short (localrun.Stats.CutShort).
	cutShort int64
}

// runCrawl runs the handlers on the queues until they run out or the run is stopped, with
// progress lines, buffered counters and, on a metered backend, the budget's check; on the
// embedded backend it readmits the pages of the budget left and goes on while there are any.
func runCrawl(ctx context.Context, o RunOptions, env runEnv, p pick, stderr io.Writer) runOutcome {
	be, h := env.be, env.h
	runner := NewRunner(be.Queue, env.res, h, o.Concurrency, o.Visibility, env.log)
	runner.IdleCheck = be.IdleCheck
	if be.Metered {
		bookCosts(runner, h.State, env.log)
	}
	start := time.Now()
	stopCounters := holdCounters(ctx, h.State, counterInterval, env.log)
	every := progressEmbedded
	if o.Backend == "aws" {
		every = progressAWS
	}
	prog := startProgress(ctx, stderr, o.Quiet, progressOf{crawl: p.id, st: h.State, start: start, every: every,
		fetchedBefore: p.fetched, waiting: waitLine(be.Queue, env.res)})
	work, released := graceful(ctx, o.StopGrace, stderr)
	runErr := runner.RunGraceful(ctx, work)
	for pass := 0; runErr == nil && be.Name == "embedded" && pass < maxReadmitPasses; pass++ {
		// Pages of the budget left, and links refused over it: they go on.
		n, err := readmitOverBudget(ctx, be, env.res, h, p.id)
		if err != nil {
			runErr = err
		}
		if n == 0 || err != nil {
			break
		}
		runErr = runner.RunGraceful(ctx, work)
	}
	released()
	prog.stop()
	releaseBudgets(ctx, h.State, env.log)
	counted := stopCounters()
	// A crawl this run started on its own state, and ended cleanly, has every transition counted.
	exact := be.Name == "embedded" && p.created && runErr == nil && counted == nil
	return runOutcome{start: start, err: runErr, exact: exact, cutShort: runner.Stats.CutShort.Load()}
}

// reportRun summarizes the run's crawl and the others it advanced, announces the ends, prints the
// summary and says why the run ended the way it did: its exit code.
func reportRun(ctx context.Context, o RunOptions, env runEnv, sum Summary, others []Summary, out runOutcome,
	stdout, stderr io.Writer) (Summary, int) {
	be, h, crawl := env.be, env.h, sum.Crawl
	sum, err := summarize(context.WithoutCancel(ctx), h.State, be, env.res, crawl, out.start, sum, out.exact)
	if err != nil {
		fmt.Fprintf(stderr, "crawl: summary: %v\n", err)
	}
	sum.Finished = out.err == nil
	for _, a := range others {
		a.prices = sum.prices
		also, err := summarize(context.WithoutCancel(ctx), h.State, be, env.res, a.Crawl, out.start, a, false)
		if err != nil {
			fmt.Fprintf(stderr, "crawl: summary of %s: %v\n", a.Crawl, err)
			continue
		}
		also.Finished = out.err == nil && also.Pending == 0
		sum.Also = append(sum.Also, also)
	}
	announced := announceEnd(context.WithoutCancel(ctx), h, be, &sum, stderr) // the queues ran out: the crawls drained
	printSummary(stdout, stderr, sum, o.JSON, hintsOf(o))
	if sum.Classes[string(errclass.SSRF)] > 0 {
		explainRefused(context.WithoutCancel(ctx), stderr, h.State, crawl, sum.Classes[string(errclass.SSRF)], sum.Fetched,
			be.Name == "embedded")
	}
	switch {
	case errors.Is(out.err, context.Canceled):
		where := o.State
		if o.Backend != "embedded" {
			where = be.Where("")
		}
		fmt.Fprintf(stderr, "crawl: interrupted: %d pages of crawl %s are saved in %s%s; run the same command again to resume\n",
			sum.Fetched, crawl, where, cutShortNote(out.cutShort))
		return sum, ExitInterrupted
	case out.err != nil:
		fmt.Fprintf(stderr, "crawl: %v\n", out.err)
		return sum, ExitFailed
	case sum.Fetched == 0:
		fmt.Fprintf(stderr, "crawl: no page could be fetched (%s lists why)\n", hintsOf(o).cmd("failures", crawl))
		return sum, ExitFailed
	case !announced:
		return sum, ExitFailed
	}
	return sum, ExitOK
}
