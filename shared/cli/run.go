// Package cli is the `crawl` command: `crawl run` crawls a seed file on the embedded backend (or
// on AWS), `crawl demo` serves a generated site on loopback and crawls it, and `crawl redrive`
// moves a dead-letter queue's messages back. Main is what cmd/crawl calls and what the
// end-to-end tests drive.
package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawlstate"
	"github.com/crawlstack/crawlstack/shared/errclass"
	"github.com/crawlstack/crawlstack/shared/handoff"
	"github.com/crawlstack/crawlstack/shared/ledger"
	"github.com/crawlstack/crawlstack/shared/localrun"
	"github.com/crawlstack/crawlstack/shared/meter"
	"github.com/crawlstack/crawlstack/shared/pipeline"
	"github.com/crawlstack/crawlstack/shared/queue"
	"github.com/crawlstack/crawlstack/shared/scheduler"
	"github.com/crawlstack/crawlstack/shared/scope"
	"github.com/crawlstack/crawlstack/shared/seeds"
	"github.com/crawlstack/crawlstack/shared/telemetry"
)

// Exit codes.
const (
	ExitOK          = 0
	ExitFailed      = 1
	ExitUsage       = 2
	ExitInterrupted = 130
)

// RunOptions are the flags of `crawl run`.
type RunOptions struct {
	State           string
	Backend         string
	Concurrency     int
	HostConcurrency int
	HostRPS         float64
	Scope           string
	MaxDepth        int
	MaxPages        int
	MaxPagesPerHost int
	UserAgent       string
	AllowNet        []string
	AllowPorts      []int
	MaxBodyBytes    int64
	FetchTimeout    time.Duration
	Include         []string
	Exclude         []string
	Fingerprint     string
	JSON            bool
	Visibility      time.Duration
	MaxReceive      int
	MaxTries        int
	RetryWait       time.Duration
	Quiet           bool
	Fresh           bool
	Name            string
	SeedFile        string
	BudgetUSD       float64
	Prices          string
	OTel            string
	Log             LogFlags
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// runFlags defines the flags of `crawl run` (and of `crawl demo` after "--", without the
// seed file's) on a new flag set that fills o. Their usage strings are the flags' one
// documentation: `crawl run --help` prints them, and the README's flag table is generated from
// them (TestREADMEFlagTable).
func runFlags(name string, o *RunOptions, wantSeed bool) *flag.FlagSet {
	d := pipeline.DefaultConfig()
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.StringVar(&o.State, "state", "crawl-state", "state directory: queues and table (state.db), pages and records (blobs/); embedded backend only (refused with --backend aws)")
	fs.StringVar(&o.Backend, "backend", "embedded", "embedded (no AWS), or aws: the same local runner on SQS, DynamoDB and S3, as AWS_ENDPOINT_URL* and CRAWL_TABLE, CRAWL_BUCKET, CRAWL_QUEUE_PREFIX say (docs/localstack.md)")
	fs.IntVar(&o.Concurrency, "concurrency", 32, "fetches in flight at once")
	fs.IntVar(&o.HostConcurrency, "host-concurrency", d.HostConcurrency, "fetches in flight per host (0: no bound)")
	fs.Float64Var(&o.HostRPS, "host-rps", d.HostRPS, "requests per second per host, shared by all workers; 0 lifts it for a site you own (robots.txt Crawl-delay still applies)")
	fs.StringVar(&o.Scope, "scope", string(d.Scope), "which links are followed: the seed's host, its registrable domain, or any")
	fs.IntVar(&o.MaxDepth, "max-depth", d.MaxDepth, "link hops from a seed (0: the seeds only; -1: no limit)")
	fs.IntVar(&o.MaxPages, "max-pages", 0, "URLs admitted to the crawl, never more (0: no limit); the links over it end skipped with class budget. An admitted URL then skipped (robots.txt, content type) counts too, so a crawl may fetch fewer pages (docs/safety.md)")
	fs.IntVar(&o.MaxPagesPerHost, "max-pages-per-host", d.MaxPagesPerHost, "URLs admitted per host, a spider-trap guard (0: no limit)")
	fs.StringVar(&o.UserAgent, "user-agent", d.UserAgent, "the User-Agent header; its product token selects the robots.txt group")
	fs.Var((*listFlag)(&o.AllowNet), "allow-net", "a non-public range (CIDR, or one IP) that may be crawled: non-public addresses are refused otherwise; repeatable")
	fs.Func("allow-port", "another port that public addresses may be fetched on, besides 80 and 443; repeatable", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("port %q: want 1 to 65535", v)
		}
		o.AllowPorts = append(o.AllowPorts, n)
		return nil
	})
	fs.Int64Var(&o.MaxBodyBytes, "max-body-bytes", 10<<20, "body bytes read from the wire per page (over it: too_large)")
	fs.DurationVar(&o.FetchTimeout, "fetch-timeout", d.FetchTimeout, "time for one fetch, redirects and body included")
	fs.Var((*listFlag)(&o.Include), "include", "a regexp a URL must match (repeatable: any one suffices)")
	fs.Var((*listFlag)(&o.Exclude), "exclude", "a regexp a URL must not match (repeatable)")
	fs.StringVar(&o.Fingerprint, "tls-fingerprint", "", "chrome: an opt-in browser TLS ClientHello (utls), for sites that refuse Go's own")
	fs.BoolVar(&o.JSON, "json", false, "the summary as one JSON document on stdout (for jq and scripts), everything else on stderr")
	fs.BoolVar(&o.Quiet, "quiet", false, "no live progress line, even on a terminal")
	fs.DurationVar(&o.Visibility, "visibility", 30*time.Second, "visibility timeout of the queues the run creates: how long a received message stays hidden")
	fs.IntVar(&o.MaxReceive, "max-receive", d.MaxReceive, "receives before a message moves to its dead-letter queue")
	fs.IntVar(&o.MaxTries, "max-tries", d.MaxTries, "requests of a URL that keeps failing with http_5xx, http_429, timeout or connect, or whose robots.txt is down; then it ends failed with that class (skipped, robots_unavailable, for robots.txt)")
	fs.DurationVar(&o.RetryWait, "retry-wait", d.RetryWait, "wait after a URL's first failed request; each next is 4 times longer, at most 15 times this")
	o.Log.register(fs, "warn")
	fs.StringVar(&o.OTel, "otel", "", "an OTLP/HTTP endpoint (http://localhost:4318) that the crawl's traces and metrics go to; the OTEL_EXPORTER_OTLP_* variables work too (docs/operating.md)")
	if wantSeed {
		fs.StringVar(&o.Name, "name", "", "name the crawl: runs with the same name go on with the same crawl, whatever the seed file holds (letters, digits, '.', '_', '-'; at most 40)")
		fs.BoolVar(&o.Fresh, "fresh", false, "start the seed file's crawl again when it has ended (while it is unfinished, a run resumes it)")
	}
	fs.Float64Var(&o.BudgetUSD, "budget-usd", 0, "--backend aws only: stop admitting URLs once the crawl's metered bill, with what it has admitted costed at its average so far, reaches this many dollars; the crawl drains and its summary says budget (docs/cost.md; 0: none)")
	fs.StringVar(&o.Prices, "prices", "", "the prices the bill is costed at, over us-east-1 list prices: sqs=0.40,ddb_write=0.625,... (docs/cost.md)")
	return fs
}

// runHelp is the help of `crawl run`.
var runHelp = cmdHelp{
	usage: "crawl run [flags] [SEEDFILE]",
	about: "Crawl the URLs of SEEDFILE (one a line; blank lines and # comments are ignored) on the embedded\n" +
		"backend, in the state directory: run the same command again to resume. Without SEEDFILE, a run\n" +
		"goes on with what the state directory holds: its unfinished crawls and queued messages (after a\n" +
		"crawl redrive, say).",
	examples: `crawl run seeds.txt
crawl run --state my-crawl --scope domain --max-pages 5000 seeds.txt
crawl run --state my-crawl                 # go on with what my-crawl holds
crawl run --allow-net 127.0.0.0/8 --host-rps 0 local-seeds.txt   # a site on your own machine
crawl run --json seeds.txt | jq .fetched`,
}

// parseRunFlags parses `crawl run` arguments.
func parseRunFlags(name string, args []string, wantSeed bool) (RunOptions, error) {
	o := RunOptions{}
	fs := runFlags(name, &o, wantSeed)
	h := runHelp
	if !wantSeed {
		h = demoHelp
	}
	if err := parseFlags(fs, args, h); err != nil {
		return o, err
	}
	if wantSeed {
		if fs.NArg() > 1 {
			return o, fmt.Errorf("want one SEEDFILE, got %d arguments%s", fs.NArg(), quotedArgs(fs.Args()))
		}
		if o.SeedFile = fs.Arg(0); o.SeedFile == "" && (o.Backend != "embedded" || o.Name != "" || o.Fresh) {
			return o, errors.New("want a SEEDFILE (only an embedded run without --name or --fresh goes on with its state directory alone)")
		}
	} else if fs.NArg() != 0 {
		return o, fmt.Errorf("unexpected arguments %q (run's flags go after --)", fs.Args())
	}
	if o.Name != "" && !validName(o.Name) {
		return o, fmt.Errorf("--name %q: use letters, digits, '.', '_' and '-', at most 40 of them", o.Name)
	}
	if err := checkRunFlags(o); err != nil {
		return o, err
	}
	if o.Backend != "embedded" && o.Backend != "aws" {
		return o, fmt.Errorf("--backend %q: want embedded or aws", o.Backend)
	}
	if _, err := o.Log.Logger(io.Discard); err != nil {
		return o, err
	}
	if o.BudgetUSD != 0 && o.Backend != "aws" {
		return o, errors.New("--budget-usd meters what a crawl costs on AWS, and the embedded backend bills nothing: use it with --backend aws")
	}
	return o, stateOnlyEmbedded(fs, o.Backend)
}

// validName is whether name may name a crawl (--name).
func validName(name string) bool {
	if len(name) == 0 || len(name) > 40 {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// GaveUp is a URL the crawl failed, and why.
type GaveUp struct {
	URL    string `json:"url"`
	Class  string `json:"class"`
	Detail string `json:"detail,omitempty"`
}

// config turns the flags into the pipeline's configuration.
func (o RunOptions) config(r Resources) pipeline.Config {
	c := pipeline.DefaultConfig()
	c.ScheduleQueue, c.FetchQueue, c.ParseQueue = r.Schedule, r.Fetch, r.Parse
	c.Scope = scope.Mode(o.Scope)
	c.Include, c.Exclude = o.Include, o.Exclude
	c.MaxDepth, c.MaxPages, c.MaxPagesPerHost = o.MaxDepth, o.MaxPages, o.MaxPagesPerHost
	c.UserAgent, c.HostRPS, c.HostConcurrency = o.UserAgent, o.HostRPS, o.HostConcurrency
	c.AllowNets, c.Fingerprint, c.MaxReceive = o.AllowNet, o.Fingerprint, o.MaxReceive
	c.MaxTries, c.RetryWait = o.MaxTries, o.RetryWait
	if len(o.AllowPorts) > 0 {
		c.Ports = append([]int{80, 443}, o.AllowPorts...)
	}
	c.MaxBodyBytes, c.FetchTimeout = o.MaxBodyBytes, o.FetchTimeout
	c.BudgetUSD, c.Prices = o.BudgetUSD, o.Prices
	// A paused crawl's messages come back every few seconds: a resume shows at once, for a
	// receive and a send per message each time (none billed on the embedded backend).
	c.PauseWait = runPauseWait
	pollers := (o.Concurrency + queue.MaxBatch - 1) / queue.MaxBatch
	c.BatchConcurrency = (o.Concurrency + pollers - 1) / pollers
	c.FetchInFlight = o.Concurrency // NewRunner runs more fetch batches than that at once
	return c
}

// Counts are a crawl's URLs by state and class, as a run's summary and crawl status show them
// (the same JSON fields in both).
type Counts struct {
	Seen        int64 `json:"seen"`
	Fetched     int64 `json:"fetched"`
	Skipped     int64 `json:"skipped"`
	Failed      int64 `json:"failed"`
	StoppedURLs int64 `json:"stoppedUrls"`
	Pending     int64 `json:"pending"`
	ParseErrors int64 `json:"parseErrors"`
	// PagesPerSecond is the fetched pages per second: over the run in a summary, over the time
	// since the crawl started in a status.
	PagesPerSecond float64          `json:"pagesPerSecond"`
	Classes        map[string]int64 `json:"classes"`
}

// countsOf are the counts of c.
func countsOf(c crawlstate.Counters) Counts {
	n := Counts{Seen: c.Seen, Fetched: c.Fetched, Skipped: c.Skipped, Failed: c.Failed, StoppedURLs: c.StoppedURLs,
		Pending: c.Pending(), ParseErrors: c.ParseErrors, Classes: map[string]int64{}}
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
	GaveUp      []GaveUp       `json:"gaveUp,omitempty"`
	DeadLetters map[string]int `json:"deadLetters"`
	// CostUSD is the crawl's ledger priced, on a metered backend (--backend aws).
	CostUSD float64 `json:"costUsd,omitempty"`
	// BudgetUSD is --budget-usd; Stopped says "budget" when the crawl reached it.
	BudgetUSD float64 `json:"budgetUsd,omitempty"`
	Stopped   string  `json:"stopped,omitempty"`

	prices        meter.Prices // what CostUSD is costed at
	fetchedBefore int64        // the pages the crawl had fetched before this run
}

// crawlRun runs one crawl of o.SeedFile and returns its summary.
func crawlRun(ctx context.Context, o RunOptions, stdout, stderr io.Writer) (Summary, int) {
	var sum Summary
	// Bad flags are reported before anything is read or created (checkRunFlags has said what is
	// wrong with each): the pipeline's own check, with stand-in queue names, is a backstop.
	if err := o.config(Resources{Schedule: "schedule", Fetch: "fetch", Parse: "parse"}).Validate(); err != nil {
		fmt.Fprintf(stderr, "crawl: bad flags:\n%v\n", err)
		return sum, ExitUsage
	}
	var body []byte
	if o.SeedFile != "" {
		var err error
		if body, err = os.ReadFile(o.SeedFile); err != nil {
			fmt.Fprintf(stderr, "crawl: cannot read the seed file: %v\n", err)
			return sum, ExitUsage
		}
		good, bad, code := readSeeds(o, body, stderr)
		if code != ExitOK {
			return sum, code
		}
		sum.BadSeedLines = bad
		if good == 0 {
			fmt.Fprintf(stderr, "crawl: %s has no valid seed URL (%d bad lines): nothing to crawl\n", o.SeedFile, bad)
			return sum, ExitUsage
		}
	}
	sum.BudgetUSD = o.BudgetUSD
	var err error
	if sum.prices, err = o.config(Resources{}).PriceTable(); err != nil {
		fmt.Fprintf(stderr, "crawl: --prices: %v\n", err)
		return sum, ExitUsage
	}
	if o.SeedFile == "" {
		if _, err := os.Stat(filepath.Join(o.State, "state.db")); err != nil {
			fmt.Fprintf(stderr, "crawl run: no SEEDFILE, and no crawl state in %s to go on with: give a SEEDFILE (crawl run --help)\n", o.State)
			return sum, ExitUsage
		}
	}
	tel, err := telemetry.Setup(ctx, os.Getenv, telemetry.Options{Service: "crawlstack-run", Endpoint: o.OTel})
	if err != nil {
		fmt.Fprintf(stderr, "crawl: --otel: %v\n", err)
		return sum, ExitUsage
	}
	defer tel.Shutdown(context.WithoutCancel(ctx))
	be, err := openBackend(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "crawl: %v\n", err)
		return sum, ExitFailed
	}
	defer be.Close()
	if be.SyncsFiles {
		defer spareProc()()
	}
	if o.Backend == "embedded" {
		unlock, err := lockState(o.State)
		if err != nil {
			fmt.Fprintf(stderr, "crawl: %v\n", err)
			return sum, ExitFailed
		}
		defer unlock()
	}
	if be.Existing != nil {
		fmt.Fprintln(stderr, "crawl: using the queues of a deployed stack: its Lambda functions consume them too, so they share this crawl's work")
	}
	res, err := be.Setup(ctx, QueueSettings{Visibility: o.Visibility, MaxReceiveCount: o.MaxReceive})
	if err != nil {
		fmt.Fprintf(stderr, "crawl: set up the %s backend: %v\n", be.Name, err)
		return sum, ExitFailed
	}
	if r, ok := be.Queue.(reclaimer); ok && o.Backend == "embedded" {
		n, err := r.ReclaimInFlight(ctx)
		if err != nil {
			fmt.Fprintf(stderr, "crawl: %v\n", err)
			return sum, ExitFailed
		}
		if n > 0 {
			fmt.Fprintf(stderr, "crawl: took back %d messages that a run which did not end cleanly (killed?) had in flight\n", n)
		}
	}
	logger, _ := o.Log.Logger(stderr) // checked with the flags
	log := slog.New(interruptQuiet{Handler: logger.Handler(), ctx: ctx})
	// Fetch and parse run in this process, so parse takes the pages fetch has just stored from memory.
	h, err := pipeline.New(o.config(res), pipeline.Ports{Queue: be.Queue, Table: be.Table, Blobs: be.Blobs,
		Handoff: handoff.New(handoff.DefaultMaxBytes, handoff.DefaultMaxAge)}, log)
	if err != nil {
		fmt.Fprintf(stderr, "crawl: %v\n", err)
		return sum, ExitUsage
	}
	defer h.Close()

	if o.SeedFile == "" {
		return goOn(ctx, o, be, res, h, log, sum, stdout, stderr)
	}
	key, version := seedObject(be, filepath.Base(o.SeedFile), body)
	if o.Name != "" {
		key, version = namedObject(be, o.Name)
	}
	p, err := chooseCrawl(ctx, h.State, be.Bucket, key, version, o.Fresh)
	if err != nil {
		fmt.Fprintf(stderr, "crawl: %v\n", err)
		return sum, ExitFailed
	}
	if be.Name == "embedded" && !p.ended && p.fetched > 0 {
		// The counters miss the pages a killed run recorded but had not counted yet: this run's
		// count of its own pages starts from the exact one (a scan is a local query here).
		c, err := h.State.Tally(ctx, p.id)
		if err != nil {
			fmt.Fprintf(stderr, "crawl: %v\n", err)
			return sum, ExitFailed
		}
		p.fetched = c.Fetched
	}
	var others []Summary
	if be.Name == "embedded" && !p.ended {
		if others, err = unfinishedOthers(ctx, h.State, p.id); err != nil {
			fmt.Fprintf(stderr, "crawl: %v\n", err)
			return sum, ExitFailed
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
	fmt.Fprintf(stderr, "crawl: %s\n", p.note)
	crawl := p.id
	sum.Crawl, sum.fetchedBefore = crawl, p.fetched
	if p.ended {
		sum, err = summarize(ctx, h.State, be, res, crawl, time.Now(), sum)
		if err != nil {
			fmt.Fprintf(stderr, "crawl: summary: %v\n", err)
			return sum, ExitFailed
		}
		sum.Finished, sum.AlreadyEnded = true, true
		printSummary(stdout, stderr, sum, o.JSON)
		return sum, ExitOK
	}
	if err := startSeed(ctx, be, res, p.key, p.version, body); err != nil {
		fmt.Fprintf(stderr, "crawl: %v\n", err)
		return sum, ExitFailed
	}
	runner := NewRunner(be.Queue, res, h, o.Concurrency, o.Visibility, log)
	runner.IdleCheck = be.IdleCheck
	if be.Metered {
		bookCosts(runner, h.State, log)
		h.State.CostCheck = budgetCheck
	}
	start := time.Now()
	stopCounters := holdCounters(ctx, h.State, counterInterval, log)
	every := progressEmbedded
	if o.Backend == "aws" {
		every = progressAWS
	}
	prog := startProgress(ctx, stderr, o.Quiet, progressOf{crawl: crawl, st: h.State, start: start, every: every,
		fetchedBefore: p.fetched, waiting: waitLine(be.Queue, res)})
	runErr := runner.Run(ctx)
	prog.stop()
	stopCounters()

	sum, err = summarize(context.WithoutCancel(ctx), h.State, be, res, crawl, start, sum)
	if err != nil {
		fmt.Fprintf(stderr, "crawl: summary: %v\n", err)
	}
	sum.Finished = runErr == nil
	for _, a := range others {
		a.prices = sum.prices
		also, err := summarize(context.WithoutCancel(ctx), h.State, be, res, a.Crawl, start, a)
		if err != nil {
			fmt.Fprintf(stderr, "crawl: summary of %s: %v\n", a.Crawl, err)
			continue
		}
		also.Finished = runErr == nil && also.Pending == 0
		sum.Also = append(sum.Also, also)
	}
	printSummary(stdout, stderr, sum, o.JSON)
	if sum.Classes[string(errclass.SSRF)] > 0 {
		explainRefused(context.WithoutCancel(ctx), stderr, h.State, crawl, sum.Classes[string(errclass.SSRF)], sum.Fetched)
	}
	switch {
	case errors.Is(runErr, context.Canceled):
		where := o.State
		if o.Backend != "embedded" {
			where = be.Where("")
		}
		fmt.Fprintf(stderr, "crawl: interrupted: %d pages of crawl %s are saved in %s; run the same command again to resume\n",
			sum.Fetched, crawl, where)
		return sum, ExitInterrupted
	case runErr != nil:
		fmt.Fprintf(stderr, "crawl: %v\n", runErr)
		return sum, ExitFailed
	case sum.Fetched == 0:
		fmt.Fprintf(stderr, "crawl: no page could be fetched (crawl failures %s lists why)\n", crawl)
		return sum, ExitFailed
	}
	return sum, ExitOK
}

// readSeeds checks the seed file before anything is created: a crawl spec must have no problem
// at all (each is printed with its line, and the run stops), a URL list's bad lines are printed
// and skipped. It returns the good and bad seed counts.
func readSeeds(o RunOptions, body []byte, stderr io.Writer) (good, bad, code int) {
	if crawlspec.IsSpec(o.SeedFile, body) {
		spec, err := crawlspec.Parse(body, o.config(Resources{}).SpecBounds())
		var es crawlspec.Errors
		if errors.As(err, &es) {
			for _, e := range es {
				fmt.Fprintf(stderr, "crawl: %s: %v\n", o.SeedFile, e)
			}
			fmt.Fprintf(stderr, "crawl: %s: %d problem(s) in the crawl spec (docs/spec.md): nothing crawled\n", o.SeedFile, len(es))
			return 0, 0, ExitUsage
		}
		return len(spec.Seeds), 0, ExitOK
	}
	seedsOK, lines, err := seeds.Parse(bytes.NewReader(body))
	if err != nil {
		fmt.Fprintf(stderr, "crawl: reading %s: %v\n", o.SeedFile, err)
		return 0, 0, ExitUsage
	}
	reportBadSeeds(stderr, o.SeedFile, lines)
	return len(seedsOK), len(lines), ExitOK
}

// runPauseWait is how long a paused crawl's fetch messages wait between looks under crawl run.
const runPauseWait = 5 * time.Second

// budgetCheck is how often crawl run reads its crawl's ledger against --budget-usd: the ledger is
// 129 items, a read unit each, and its counters are written every counterInterval.
const budgetCheck = time.Second

// bookCosts adds what each of the runner's invocations is metered for to its crawls' ledgers (the
// AWS backend's SDK calls; no Lambda bills a local run), so that a budget can stop the crawl.
func bookCosts(r *localrun.Runner, st *crawlstate.Store, log *slog.Logger) {
	l := &ledger.Ledger{State: st, Log: log}
	for i := range r.Sources {
		r.Sources[i].Handler = localrun.Invoke(l.Wrap(ledger.Handler(r.Sources[i].Handler)))
	}
}

// counterInterval is how often crawl run writes the crawl counters its handlers buffer.
const counterInterval = 100 * time.Millisecond

// holdCounters has every handler of this process buffer its counter increments, and writes them
// every interval instead of at the end of each invocation: one write where thousands of batches
// each made their own, on the way between two invocations. The returned function writes what is
// left, also after an interrupt.
func holdCounters(ctx context.Context, st *crawlstate.Store, interval time.Duration, log *slog.Logger) func() {
	st.BufferCounters, st.HoldCounters = true, true
	stop := localrun.Every(ctx, interval, func() {
		if err := st.WriteCounters(ctx); err != nil && ctx.Err() == nil {
			log.Warn("write the crawl counters", "err", err.Error())
		}
	})
	return func() {
		stop()
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := st.WriteCounters(wctx); err != nil {
			log.Warn("write the crawl counters", "err", err.Error())
		}
	}
}

// StartCrawl drops the seed file into seeds/ and tells schedule, as S3 would. The crawl is named
// after the file's content, so starting the same file again resumes its crawl.
func StartCrawl(ctx context.Context, be *Backend, res Resources, name string, body []byte) (string, error) {
	key, version := seedObject(be, name, body)
	if err := startSeed(ctx, be, res, key, version, body); err != nil {
		return "", err
	}
	return scheduler.CrawlID(be.Bucket, key, version), nil
}

// startSeed stores the seed file body at key and sends schedule the S3 notification of that
// version of it.
func startSeed(ctx context.Context, be *Backend, res Resources, key, version string, body []byte) error {
	if err := be.Blobs.Put(ctx, key, body, "text/plain"); err != nil {
		return fmt.Errorf("store the seed file: %w", err)
	}
	note, err := s3Notification(be.Bucket, key, version, int64(len(body)))
	if err != nil {
		return err
	}
	// The seed's send is where a crawl's trace starts (package telemetry).
	if err := (telemetry.Sender{Next: be.Queue}).SendBatch(ctx, res.Schedule, []queue.Entry{{ID: "seed", Body: note}}); err != nil {
		return fmt.Errorf("start the crawl: %w", err)
	}
	return nil
}

// CrawlOf is the id of the crawl that StartCrawl starts for a seed file of that name and body.
func CrawlOf(be *Backend, name string, body []byte) string {
	key, version := seedObject(be, name, body)
	return scheduler.CrawlID(be.Bucket, key, version)
}

// seedObject is the key of the seed file name in be, and the version S3 would give its body: the
// digest of its seed lines, so that comments, blank lines and spaces around a URL do not make
// another crawl of the same seeds.
func seedObject(be *Backend, name string, body []byte) (key, version string) {
	digest := sha256.Sum256(seedLines(body))
	prefix := be.SeedsPrefix
	if prefix == "" {
		prefix = scheduler.SeedsPrefix
	}
	return prefix + name, hex.EncodeToString(digest[:])
}

// namedObject is the key and version of a crawl named by --name: the name alone decides the crawl,
// whatever the seed file holds.
func namedObject(be *Backend, name string) (key, version string) {
	prefix := be.SeedsPrefix
	if prefix == "" {
		prefix = scheduler.SeedsPrefix
	}
	return prefix + "named/" + name, "named"
}

// seedLines is body without the lines a seed file ignores (blank lines and # comments), each line
// trimmed and ended by "\n": the same bytes as body for a file without them.
func seedLines(body []byte) []byte {
	var out []byte
	for _, line := range strings.Split(string(body), "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(line, "\ufeff"))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(append(out, line...), '\n')
	}
	return out
}

// NewRunner plays Lambda's event source mappings for the three handlers: about concurrency
// fetches in flight, in batches of up to 10. A fetch batch records its pages together at its end,
// and its GETs are done while it does: so fetch runs fetchSets times as many batches as
// concurrency needs, and the HTTP client keeps at most concurrency GETs in flight over all of
// them (the run's Config.FetchInFlight). With one set of batches, a crawl of a site that answers
// in 50 ms had 19 to 21 of its 32 fetches in flight on average, at 0.60x to 0.67x of the pages/s
// of a client that GETs the known URL list; with two, 25 to 26, at 0.78x to 0.83x
// (docs/bench.md). At most about fetchSets x concurrency pages are fetched but not yet recorded at any
// moment: the most a crash can make the next run fetch again.
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
	return &localrun.Runner{Queues: q, Log: log, Sources: []localrun.Source{
		src("schedule", res.Schedule, h.Schedule.Handle, max(2, pollers/2)),
		src("fetch", res.Fetch, h.Fetch.Handle, max(sets, 1)*pollers),
		src("parse", res.Parse, h.Parse.Handle, max(2, pollers/2)),
	}}
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

// s3Notification is the S3 ObjectCreated event, wrapped as S3 sends it to SQS.
func s3Notification(bucket, key, sequencer string, size int64) (string, error) {
	ev := events.S3Event{Records: []events.S3EventRecord{{
		EventVersion: "2.1", EventSource: "aws:s3", AWSRegion: "local", EventTime: time.Now().UTC(),
		EventName: "ObjectCreated:Put",
		S3: events.S3Entity{SchemaVersion: "1.0", Bucket: events.S3Bucket{Name: bucket, Arn: "arn:aws:s3:::" + bucket},
			Object: events.S3Object{Key: escapeKey(key), Size: size, Sequencer: sequencer}},
	}}}
	b, err := json.Marshal(ev)
	if err != nil {
		return "", fmt.Errorf("build the s3 notification: %w", err)
	}
	return string(b), nil
}

// escapeKey URL-encodes an object key the way S3 notifications do ('+' for a space, '/' kept).
func escapeKey(key string) string {
	return strings.ReplaceAll(url.QueryEscape(key), "%2F", "/")
}

// signalContext ends on SIGINT or SIGTERM.
func signalContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}
