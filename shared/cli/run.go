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

	"github.com/crawlstack/crawlstack/shared/crawlstate"
	"github.com/crawlstack/crawlstack/shared/handoff"
	"github.com/crawlstack/crawlstack/shared/ledger"
	"github.com/crawlstack/crawlstack/shared/localrun"
	"github.com/crawlstack/crawlstack/shared/meter"
	"github.com/crawlstack/crawlstack/shared/pipeline"
	"github.com/crawlstack/crawlstack/shared/queue"
	"github.com/crawlstack/crawlstack/shared/scheduler"
	"github.com/crawlstack/crawlstack/shared/scope"
	"github.com/crawlstack/crawlstack/shared/seeds"
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
	SeedFile        string
	BudgetUSD       float64
	Prices          string
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// parseRunFlags parses `crawl run` arguments.
func parseRunFlags(name string, args []string, stderr io.Writer, wantSeed bool) (RunOptions, error) {
	d := pipeline.DefaultConfig()
	o := RunOptions{}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.State, "state", "crawl-state", "state directory of the embedded backend (queues, table, pages, records)")
	fs.StringVar(&o.Backend, "backend", "embedded", "embedded, or aws (AWS_ENDPOINT_URL* select LocalStack or the emulators)")
	fs.IntVar(&o.Concurrency, "concurrency", 32, "fetches in flight at once")
	fs.IntVar(&o.HostConcurrency, "host-concurrency", d.HostConcurrency, "fetches in flight per host (0: no limit)")
	fs.Float64Var(&o.HostRPS, "host-rps", d.HostRPS, "requests per second per host; 0 lifts the limit for a site you own (robots.txt Crawl-delay still applies)")
	fs.StringVar(&o.Scope, "scope", string(d.Scope), "host, domain or any: which links of a seed's pages are followed")
	fs.IntVar(&o.MaxDepth, "max-depth", d.MaxDepth, "most link hops from a seed (0: the seeds only, -1: no limit)")
	fs.IntVar(&o.MaxPages, "max-pages", 0, "most pages admitted to the crawl (0: no limit)")
	fs.IntVar(&o.MaxPagesPerHost, "max-pages-per-host", d.MaxPagesPerHost, "most pages admitted per host, a spider-trap guard (0: no limit)")
	fs.StringVar(&o.UserAgent, "user-agent", d.UserAgent, "User-Agent header; its product token selects the robots.txt group")
	fs.Var((*listFlag)(&o.AllowNet), "allow-net", "CIDR (or IP) of a non-public range that may be crawled; repeatable")
	fs.Func("allow-port", "port that public addresses may be fetched on, besides 80 and 443; repeatable", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("port %q: want 1 to 65535", v)
		}
		o.AllowPorts = append(o.AllowPorts, n)
		return nil
	})
	fs.Int64Var(&o.MaxBodyBytes, "max-body-bytes", 10<<20, "most body bytes read from the wire per page (over it: too_large)")
	fs.DurationVar(&o.FetchTimeout, "fetch-timeout", d.FetchTimeout, "most time for one fetch, redirects and body included")
	fs.Var((*listFlag)(&o.Include), "include", "regexp a URL must match (repeatable; any one suffices)")
	fs.Var((*listFlag)(&o.Exclude), "exclude", "regexp a URL must not match (repeatable)")
	fs.StringVar(&o.Fingerprint, "tls-fingerprint", "", `TLS ClientHello: "" (Go's own) or "chrome" (opt-in, through utls)`)
	fs.BoolVar(&o.JSON, "json", false, "print a JSON summary as the last line of stdout")
	fs.DurationVar(&o.Visibility, "visibility", 30*time.Second, "visibility timeout of the local queues")
	fs.IntVar(&o.MaxReceive, "max-receive", d.MaxReceive, "receives before a message moves to its dead-letter queue")
	fs.IntVar(&o.MaxTries, "max-tries", d.MaxTries, "most requests of a URL that fails with http_5xx, http_429, timeout or connect (or whose robots.txt is down); then it is failed")
	fs.DurationVar(&o.RetryWait, "retry-wait", d.RetryWait, "wait after a URL's first failed request; each next wait is 4 times longer, at most 15 times this")
	fs.BoolVar(&o.Quiet, "quiet", false, "no live progress even on a terminal")
	fs.Float64Var(&o.BudgetUSD, "budget-usd", 0, "stop admitting URLs once the crawl's metered AWS bill reaches this many dollars, and let it drain (0: no budget; the aws backend only: the embedded one bills nothing)")
	fs.StringVar(&o.Prices, "prices", "", "prices the bill is costed at, over us-east-1 list prices: sqs=0.40,ddb_write=0.625,... (see docs/cost.md)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: crawl %s [flags]%s\n", name, map[bool]string{true: " SEEDFILE", false: ""}[wantSeed])
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if wantSeed {
		if fs.NArg() != 1 {
			fs.Usage()
			return o, fmt.Errorf("crawl %s: want exactly one SEEDFILE, got %d arguments", name, fs.NArg())
		}
		o.SeedFile = fs.Arg(0)
	} else if fs.NArg() != 0 {
		return o, fmt.Errorf("crawl %s: unexpected arguments %q", name, fs.Args())
	}
	if o.Concurrency < 1 {
		return o, fmt.Errorf("--concurrency %d: must be at least 1", o.Concurrency)
	}
	if o.Backend != "embedded" && o.Backend != "aws" {
		return o, fmt.Errorf("--backend %q: want embedded or aws", o.Backend)
	}
	if o.BudgetUSD != 0 && o.Backend != "aws" {
		return o, errors.New("--budget-usd meters what a crawl costs on AWS, and the embedded backend bills nothing: use it with --backend aws")
	}
	return o, stateOnlyEmbedded(fs, o.Backend)
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

// Summary is the result of a run, printed as text and, with --json, as the last line of stdout.
type Summary struct {
	Crawl          string  `json:"crawl"`
	Finished       bool    `json:"finished"`
	ElapsedSeconds float64 `json:"elapsedSeconds"`
	Counts
	BadSeedLines int    `json:"badSeedLines"`
	Pages        string `json:"pages"`
	Records      string `json:"records"`
	// GaveUp lists some of the failed URLs (crawlstate.MaxGaveUp at most), with why.
	GaveUp      []GaveUp       `json:"gaveUp,omitempty"`
	DeadLetters map[string]int `json:"deadLetters"`
	// CostUSD is the crawl's ledger priced, on a metered backend (--backend aws).
	CostUSD float64 `json:"costUsd,omitempty"`
	// BudgetUSD is --budget-usd; Stopped says "budget" when the crawl reached it.
	BudgetUSD float64 `json:"budgetUsd,omitempty"`
	Stopped   string  `json:"stopped,omitempty"`

	prices meter.Prices // what CostUSD is costed at
}

// crawlRun runs one crawl of o.SeedFile and returns its summary.
func crawlRun(ctx context.Context, o RunOptions, stdout, stderr io.Writer) (Summary, int) {
	var sum Summary
	body, err := os.ReadFile(o.SeedFile)
	if err != nil {
		fmt.Fprintf(stderr, "crawl: cannot read the seed file: %v\n", err)
		return sum, ExitUsage
	}
	// Bad flags are reported before anything is created: check them with stand-in queue names.
	if err := o.config(Resources{Schedule: "schedule", Fetch: "fetch", Parse: "parse"}).Validate(); err != nil {
		fmt.Fprintf(stderr, "crawl: bad flags:\n%v\n", err)
		return sum, ExitUsage
	}
	good, bad, err := seeds.Parse(bytes.NewReader(body))
	if err != nil {
		fmt.Fprintf(stderr, "crawl: reading %s: %v\n", o.SeedFile, err)
		return sum, ExitUsage
	}
	for _, le := range bad {
		fmt.Fprintf(stderr, "crawl: %s: skipping bad seed %v\n", o.SeedFile, le)
	}
	sum.BadSeedLines = len(bad)
	sum.BudgetUSD = o.BudgetUSD
	if sum.prices, err = o.config(Resources{}).PriceTable(); err != nil {
		fmt.Fprintf(stderr, "crawl: --prices: %v\n", err)
		return sum, ExitUsage
	}
	if len(good) == 0 {
		fmt.Fprintf(stderr, "crawl: %s has no valid seed URL (%d bad lines): nothing to crawl\n", o.SeedFile, len(bad))
		return sum, ExitUsage
	}
	be, err := openBackend(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "crawl: %v\n", err)
		return sum, ExitFailed
	}
	defer be.Close()
	if be.SyncsFiles {
		defer spareProc()()
	}
	if be.Existing != nil {
		fmt.Fprintln(stderr, "crawl: using the queues of a deployed stack: its Lambda functions consume them too, so they share this crawl's work")
	}
	res, err := be.Setup(ctx, QueueSettings{Visibility: o.Visibility, MaxReceiveCount: o.MaxReceive})
	if err != nil {
		fmt.Fprintf(stderr, "crawl: set up the %s backend: %v\n", be.Name, err)
		return sum, ExitFailed
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// Fetch and parse run in this process, so parse takes the pages fetch has just stored from memory.
	h, err := pipeline.New(o.config(res), pipeline.Ports{Queue: be.Queue, Table: be.Table, Blobs: be.Blobs,
		Handoff: handoff.New(handoff.DefaultMaxBytes, handoff.DefaultMaxAge)}, log)
	if err != nil {
		fmt.Fprintf(stderr, "crawl: %v\n", err)
		return sum, ExitUsage
	}
	defer h.Close()

	crawl, err := StartCrawl(ctx, be, res, filepath.Base(o.SeedFile), body)
	if err != nil {
		fmt.Fprintf(stderr, "crawl: %v\n", err)
		return sum, ExitFailed
	}
	sum.Crawl = crawl
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
	prog := startProgress(ctx, stderr, o.Quiet, crawl, h.State, start, every)
	runErr := runner.Run(ctx)
	prog.stop()
	stopCounters()

	sum, err = summarize(context.WithoutCancel(ctx), h.State, be, res, crawl, start, sum)
	if err != nil {
		fmt.Fprintf(stderr, "crawl: summary: %v\n", err)
	}
	sum.Finished = runErr == nil
	printSummary(stdout, sum, o.JSON)
	switch {
	case errors.Is(runErr, context.Canceled):
		fmt.Fprintln(stderr, "crawl: interrupted; run the same command again to resume")
		return sum, ExitInterrupted
	case runErr != nil:
		fmt.Fprintf(stderr, "crawl: %v\n", runErr)
		return sum, ExitFailed
	}
	return sum, ExitOK
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
	if err := be.Blobs.Put(ctx, key, body, "text/plain"); err != nil {
		return "", fmt.Errorf("store the seed file: %w", err)
	}
	note, err := s3Notification(be.Bucket, key, version, int64(len(body)))
	if err != nil {
		return "", err
	}
	if err := be.Queue.SendBatch(ctx, res.Schedule, []queue.Entry{{ID: "seed", Body: note}}); err != nil {
		return "", fmt.Errorf("start the crawl: %w", err)
	}
	return scheduler.CrawlID(be.Bucket, key, version), nil
}

// CrawlOf is the id of the crawl that StartCrawl starts for a seed file of that name and body.
func CrawlOf(be *Backend, name string, body []byte) string {
	key, version := seedObject(be, name, body)
	return scheduler.CrawlID(be.Bucket, key, version)
}

// seedObject is the key of the seed file name in be, and the version S3 would give its body.
func seedObject(be *Backend, name string, body []byte) (key, version string) {
	digest := sha256.Sum256(body)
	prefix := be.SeedsPrefix
	if prefix == "" {
		prefix = scheduler.SeedsPrefix
	}
	return prefix + name, hex.EncodeToString(digest[:])
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
