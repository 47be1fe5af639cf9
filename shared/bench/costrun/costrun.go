// Package costrun measures what a crawl costs on AWS: it crawls a generated web of many hosts
// (shared/demo/multisite) through the AWS adapters, on whatever endpoints the SDK configuration names
// (the local emulators for `make cost`), with the three handlers driven as the stack's event
// source mappings drive them, and meters every billed unit on the way (shared/observe/meter): the SDK's
// calls, each invocation's duration at the function's memory, and the log bytes. It also counts
// the writes each table item receives, to find hot keys.
package costrun

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"strings"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/cost"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go/logging"

	"github.com/crawlstack/crawlstack/shared/app/cli"
	"github.com/crawlstack/crawlstack/shared/app/pipeline"
	"github.com/crawlstack/crawlstack/shared/aws/awsconfig"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/finish"
	"github.com/crawlstack/crawlstack/shared/crawl/web/render"
	"github.com/crawlstack/crawlstack/shared/demo/jssite"
	"github.com/crawlstack/crawlstack/shared/demo/multisite"
	"github.com/crawlstack/crawlstack/shared/demo/realweb"
	"github.com/crawlstack/crawlstack/shared/local/localrun"
	"github.com/crawlstack/crawlstack/shared/observe/ledger"
	"github.com/crawlstack/crawlstack/shared/observe/meter"
	"github.com/crawlstack/crawlstack/shared/observe/telemetry"
	"github.com/crawlstack/crawlstack/shared/ops/crawlindex"
	"github.com/crawlstack/crawlstack/shared/testkit/tablefill"
)

// Options describe one measured crawl.
type Options struct {
	// Name says which crawl this is in the report ("wide", "single host").
	Name string
	// Web is the generated web to crawl; every host's root is a seed.
	Web multisite.Options
	// Real, when set, is the web to crawl instead of Web: many hosts of Zipf sizes with
	// real-looking pages (shared/demo/realweb).
	Real *realweb.Options
	// Render, when set, is the web to crawl instead: a site whose links only its scripts build
	// (shared/demo/jssite), crawled from a spec that renders every page in Chromium, through the
	// render function (StackRenderFunction unless Functions has one).
	Render *jssite.Options
	// Pipeline is the crawl's configuration (the stack's: pipeline.DefaultConfig); its queues are
	// set by Run, and it must allow the loopback web (AllowNets 127.0.0.0/8).
	Pipeline pipeline.Config
	// Functions are the three functions' settings (StackFunctions when nil).
	Functions map[string]Function
	// NoTopUp has the slow lane's invocations work only on the batch they are handed; the stack's
	// take more messages from their queue while their runs keep them (fetcher.Deps.TopUp).
	NoTopUp bool
	// Visibility is the queues' visibility timeout.
	Visibility time.Duration
	// Progress, when set, receives a line every ProgressEvery.
	Progress      io.Writer
	ProgressEvery time.Duration
	// HistoryItems, when above 0, is how many items of other crawls the table holds before the
	// crawl (shared/testkit/tablefill), written unmetered: a crawl must cost the same on a table
	// that other crawls have used as on an empty one (docs/state.md).
	HistoryItems int
	// Pollers is how many pollers each event source mapping has on AWS (AWSPollers), for the
	// report; 0 when not stated. The local runner polls with one per batch in flight.
	Pollers int
	// Log, when set, also receives the handlers' log lines at DEBUG, as JSON and unmetered: what a
	// crawl's functions did, to read after a run (the meter counts the INFO lines alone).
	Log io.Writer
}

// Report is what one measured crawl used.
type Report struct {
	Name string
	// Pages is how many pages were fetched, and Twice how many of them more than once; TwiceURLs
	// names the first of those, where the web can.
	Pages, Twice int
	TwiceURLs    []string
	// Largest is when the largest host's pages were requested, where the web can tell: a crawl
	// of many hosts ends no sooner than its largest host at its rate.
	Largest realweb.Span
	Hosts   int
	Elapsed time.Duration
	// MetricSeries is the most custom metric series the functions' EMF lines named in one hour
	// of the crawl (of the stack's len(metrics.Series)).
	MetricSeries int
	Units        cost.Units
	// IndexFiles and IndexLines are what the crawl's CDXJ index took in: its WARC files and their
	// response records (none when each file was stored with its own index).
	IndexFiles, IndexLines int
	// SQSCalls are the SQS requests by call and queue (meter.Meter.SQSCalls).
	SQSCalls map[string]int64
	// Ledger is the crawl's own bill, as its record holds it (package ledger): the units its
	// handlers' invocations booked, with each batch's receives and deletes as the event source
	// mapping makes them (cost.BatchRequests) and the empty receives of its queue's pollers since
	// the queue's batch before (cost.PollerReceives), which leaves out the set-up (queues, table,
	// bucket).
	Ledger cost.Units
	// Crawled is what the meter counted from the crawl's first message (its seed file sent) to
	// the end of its queues, the early empty receives left out: the part of Units that the
	// ledger books, for comparing the two. Units also holds the metric series-hours, which no
	// client sees; Crawled does not.
	Crawled cost.Units
	// EarlyEmpty counts the empty receives the emulator answered before their wait was over,
	// which SQS never does: left out of Units and SQSCalls (see earlyEmpty).
	EarlyEmpty int64
	// Delayed counts the fetch messages sent with a delay: to the politeness slot booked for them
	// at admission, or re-sent to wait again.
	Delayed int64
	// Requeued counts the fetch messages sent again for a URL (politeness waits and retries).
	Requeued int64
	// FirstMessages, FirstURLs and Groups count the fetch messages that carried their URLs for
	// the first time, those URLs, and the groups they named.
	FirstMessages, FirstURLs, Groups int64
	// LoneMessages counts those of the first fetch messages that the slow lane took with lone
	// URLs of several polite hosts (shared/crawl/frontier/groups.go).
	LoneMessages int64
	// URLs are the crawl's URLs by state and class, from its items.
	URLs crawlstate.Counters
	// HotHost is the per-host table item (politeness slot, host budget) that took the most
	// writes, and HotOther the hottest of the rest; each with its count.
	HotHost, HotOther             string
	HotHostWrites, HotOtherWrites int64
	// HotCrawl is the hottest of the crawl's own items (c#: its item and its counter shards),
	// whose writes grow with the whole crawl's rate where a URL item's end with the URL.
	HotCrawl       string
	HotCrawlWrites int64
	// Writes are the table writes (attempts, failed conditions included) by kind of item, and
	// WriteUnits the meter's write units of them.
	Writes     map[string]int64
	WriteUnits map[string]float64
	// SlotWrites are the politeness slots' writes by function: schedule's bookings as it admits,
	// fetch's for a message that came without a slot, or too late for its own.
	SlotWrites map[string]int64
	// Batches are the invocations of each function and the records they were given.
	Batches map[string]Batches
	// History is what the table held of other crawls before the crawl (none unless
	// Options.HistoryItems).
	History tablefill.Result
	// Web says what web was crawled.
	Web string
	// Ends are the crawl's ends as the drain checks announced them (none without
	// Pipeline.FinishEvery).
	Ends []finish.Event
	// Pollers is Options.Pollers.
	Pollers int
	// EvenHosts says the web's hosts have as many pages each (Options.Web), so that a host has
	// Pages/Hosts of them; the realistic web's are of Zipf sizes.
	EvenHosts bool
}

// Batches counts one function's invocations, the records they were given and the GB-seconds
// they took.
type Batches struct {
	Invocations, Records int64
	GBSeconds            float64
}

// Run crawls o.Web through the AWS adapters built from cfg (a copy of it is metered) in a fresh
// table, bucket and set of queues, and reports what the crawl used.
func Run(ctx context.Context, o Options, cfg aws.Config) (Report, error) {
	c := &costRun{o: o, fns: o.Functions, m: meter.New()}
	if c.fns == nil {
		c.fns = StackFunctions()
	}
	if _, ok := c.fns["render"]; o.Render != nil && !ok {
		c.fns = maps.Clone(c.fns)
		c.fns["render"] = StackRenderFunction()
	}
	if err := c.open(ctx, cfg); err != nil {
		return Report{}, err
	}
	if err := c.fillHistory(ctx); err != nil {
		return Report{}, err
	}
	web, err := startSite(o)
	if err != nil {
		return Report{}, err
	}
	defer web.close()
	c.web = web
	closeHandlers, err := c.startHandlers()
	defer closeHandlers()
	if err != nil {
		return Report{}, err
	}
	start := time.Now()
	// The functions' metrics, as EMF lines after each invocation, as the stack writes them.
	c.series = newEMFSeries(c.m, start)
	if c.tel, err = telemetry.Setup(ctx, func(string) string { return "" }, telemetry.Options{Service: "crawlcost", EMF: c.series}); err != nil {
		return Report{}, fmt.Errorf("metrics: %w", err)
	}
	defer c.tel.Shutdown(context.WithoutCancel(ctx))
	crawl, err := c.crawl(ctx, start)
	if err != nil {
		return Report{}, err
	}
	crawled := c.m.Snapshot().Sub(c.started)
	var index crawlindex.Result
	if o.Pipeline.WARCIndex == pipeline.IndexPerCrawl {
		// The crawl's CDXJ index, built from its WARC files as `crawl index` builds it: its reads
		// and its PUT are part of the bill.
		if index, err = crawlindex.Build(ctx, c.be.Blobs, crawl, nil); err != nil {
			return Report{}, fmt.Errorf("index the crawl: %w", err)
		}
	}
	if web.unscoped != nil {
		if n := web.unscoped(); n > 0 {
			return Report{}, fmt.Errorf("the crawl left its scope: %d connections to hosts outside the web", n)
		}
	}
	return c.report(ctx, crawl, index, start, crawled)
}

// costRun is one Run: its options, its meter, the adapters, the counters around them, and the
// handlers of each function.
type costRun struct {
	o     Options
	fns   map[string]Function
	m     *meter.Meter
	be    *cli.Backend // metered
	quiet *cli.Backend // the same table, bucket and queues, unmetered: for what the bill must not count
	// unmetered is the SDK configuration of quiet, and history what fillHistory wrote.
	unmetered aws.Config
	history   tablefill.Result
	res       cli.Resources
	web       *site
	events    endEvents

	writes   *keyWrites
	sent     *fetchSends
	log      *slog.Logger
	handlers map[string]*pipeline.Handlers
	batches  batchTally
	early    earlyEmpty
	// started is the meter's count once the crawl was started (its seed file stored and its first
	// message sent), which the ledger does not book.
	started cost.Units
	// tel exports the functions' metrics to series, which meters them.
	tel    *telemetry.Telemetry
	series *emfSeries
}

// open meters a copy of cfg, and sets up a fresh table, bucket and set of queues with it.
func (c *costRun) open(ctx context.Context, cfg aws.Config) error {
	// DynamoDB Local answers a failed condition with a wrong checksum, and the SDK would log a
	// warning for each of thousands: say nothing, the meter counts them.
	cfg.Logger = logging.Nop{}
	unmetered := cfg
	cfg = cfg.Copy()
	c.m.Register(&cfg)
	suffix, err := randomSuffix()
	if err != nil {
		return err
	}
	name := "crawlcost-" + suffix
	env := map[string]string{"CRAWL_TABLE": name, "CRAWL_BUCKET": name, "CRAWL_QUEUE_PREFIX": name + "-"}
	c.be = cli.OpenAWSWith(cfg, func(k string) string { return env[k] })
	if c.res, err = c.be.Setup(ctx, cli.QueueSettings{Visibility: c.o.Visibility, MaxReceiveCount: 5}); err != nil {
		return fmt.Errorf("set up the queues, table and bucket: %w", err)
	}
	c.quiet = cli.OpenAWSWith(unmetered, func(k string) string { return env[k] })
	c.unmetered = unmetered
	return nil
}

// historyTimeout bounds the writing of the table's history: DynamoDB Local writes 100,000 items
// in some 20 to 30 s.
const historyTimeout = 10 * time.Minute

// fillHistory writes o.HistoryItems items of other crawls into the table, unmetered: they are
// what earlier crawls left behind, no part of this crawl's bill.
func (c *costRun) fillHistory(ctx context.Context) error {
	if c.o.HistoryItems <= 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, historyTimeout)
	defer cancel()
	res, err := tablefill.Fill(ctx, awsconfig.NewClients(c.unmetered).DynamoDB, c.be.TableName, tablefill.Options{Items: c.o.HistoryItems})
	if err != nil {
		return fmt.Errorf("fill the table with %d items of other crawls: %w", c.o.HistoryItems, err)
	}
	c.history = res
	if c.o.Progress != nil {
		fmt.Fprintf(c.o.Progress, "%s: the table holds %d items of %d other crawls (%.1f MB), written in %v\n",
			c.o.Name, res.Items, res.Crawls, float64(res.Bytes)/1e6, res.Elapsed.Round(time.Second))
	}
	return nil
}

// startHandlers builds the handlers of each function on the counting adapters. closeAll closes
// those it built, also when it failed half way: the caller defers it either way.
func (c *costRun) startHandlers() (closeAll func(), err error) {
	pc := c.o.Pipeline
	pc.ScheduleQueue, pc.FetchQueue, pc.ParseQueue = c.res.Schedule, c.res.Fetch, c.res.Parse
	if c.o.Render != nil {
		pc.RenderQueue = c.res.Render
	}
	pc.SlotLead = time.Duration(c.fns["fetch"].BatchWindowSeconds) * time.Second // CRAWL_SLOT_LEAD in the stack
	c.writes = &keyWrites{t: c.be.Table}
	pc.SlowQueue = c.res.FetchSlow // the slow lane, as the stack has it: the runs of polite hosts
	c.sent = &fetchSends{Sender: c.be.Queue, queues: []string{c.res.Fetch, c.res.FetchSlow}}
	var lh slog.Handler = slog.NewJSONHandler(&logBytes{m: c.m}, &slog.HandlerOptions{Level: slog.LevelInfo})
	if c.o.Log != nil {
		lh = slog.NewMultiHandler(lh, slog.NewJSONHandler(c.o.Log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	c.log = slog.New(lh)
	// Each function has handlers of its own, as each Lambda function runs in processes of its
	// own, with its own batch concurrency (CRAWL_BATCH_CONCURRENCY on AWS).
	c.handlers = map[string]*pipeline.Handlers{}
	var built []*pipeline.Handlers
	// The render function's Chromium, started by its first page (none without a render profile).
	browser := render.NewOnDemand(render.Options{})
	closeAll = func() {
		for i := len(built) - 1; i >= 0; i-- {
			built[i].Close()
		}
		_ = browser.Close()
	}
	for _, fn := range c.functions() {
		fc := pc
		fc.BatchConcurrency = max(c.fns[fn].BatchConcurrency, 1)
		ports := pipeline.Ports{Queue: c.sent, Table: c.writes.of(fn), Blobs: c.be.Blobs}
		if fn == "schedule" && fc.FinishEvery > 0 { // schedule runs the drain checks, as in the stack
			ports.Events = &c.events
		}
		if fn == "render" {
			ports.Browser = browser
		}
		names := []string{pipeline.Schedule, pipeline.Fetch, pipeline.Parse}
		switch fn {
		case pipeline.Render:
			names = []string{pipeline.Render} // built only when named, as the render main builds it
		case pipeline.FetchSlow:
			names = []string{pipeline.FetchSlow} // the slow lane's function runs the fetch handler alone
			fc.FetchMemoryMB = c.fns[fn].MemoryMB
			if !c.o.NoTopUp {
				ports.TopUp = c.be.Queue // as the stack's fetchslow main does
			}
		}
		hs, err := pipeline.NewOnly(fc, ports, c.log, names...)
		if err != nil {
			return closeAll, err
		}
		built = append(built, hs)
		c.handlers[fn] = hs
	}
	return closeAll, nil
}

// invoke plays Lambda's side of an invocation of fn around h: it counts the batch, gives it the
// function's deadline, and meters its duration at the function's memory and its report's log bytes.
func (c *costRun) invoke(fn string, h localrun.Invoke) localrun.Invoke {
	f := c.fns[fn]
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		// Lambda's deadline: the fetch handler leaves GETs it has no time for to a later batch.
		if f.TimeoutSeconds > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, time.Duration(f.TimeoutSeconds)*time.Second)
			defer cancel()
		}
		start := time.Now()
		resp, err := h(ctx, ev)
		took := time.Since(start)
		c.m.AddLambda(took, f.MemoryMB)
		c.batches.add(fn, len(ev.Records), cost.LambdaGBSeconds(took, f.MemoryMB))
		c.m.AddLogBytes(lambdaReportBytes)
		_ = c.tel.Flush(context.WithoutCancel(ctx)) // its EMF lines, as a function writes them after each invocation
		return resp, err
	}
}

// source is fn's event source mapping on queue q, as the stack configures it.
func (c *costRun) source(fn, q string, h localrun.Invoke) localrun.Source {
	f := c.fns[fn]
	// Each invocation keeps the crawl's ledger, as the Lambda mains do (awsports.NewFunction):
	// the ledger's own table write is part of the bill. Its model of the pollers' empty receives
	// counts the pollers that the runner runs (one a batch in flight, each long-polling
	// lambdaPoll), where a Lambda function's counts AWS's cost.PollersPerQueue: the meter sees
	// the runner's.
	l := &ledger.Ledger{State: c.handlers[fn].State, MemoryMB: f.MemoryMB, ReportBytes: lambdaReportBytes, Polled: true,
		BatchSize: f.BatchSize, Pollers: max(f.MaxConcurrency, 1), PollWait: lambdaPoll, Log: c.log}
	return localrun.Source{Name: fn, Queue: q, Handler: c.invoke(fn, localrun.Invoke(l.Wrap(ledger.Handler(h)))), Pollers: f.MaxConcurrency,
		BatchSize: f.BatchSize, Window: time.Duration(f.BatchWindowSeconds) * time.Second, Visibility: c.o.Visibility,
		Poll: lambdaPoll}
}

// crawl starts a crawl of the web's roots and runs the three functions until the queues are
// empty, with a progress line every o.ProgressEvery.
func (c *costRun) crawl(ctx context.Context, start time.Time) (crawl string, err error) {
	runner := &localrun.Runner{Queues: depthUnmetered{Queues: c.early.wrap(c.be.Queue), depth: c.quiet.Queue}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Sources: []localrun.Source{
		c.source("schedule", c.res.Schedule, c.handlers["schedule"].Schedule.Handle),
		c.source("fetch", c.res.Fetch, c.handlers["fetch"].Fetch.Handle),
		c.source("parse", c.res.Parse, c.handlers["parse"].Parse.Handle),
		c.source("fetchslow", c.res.FetchSlow, c.handlers["fetchslow"].FetchSlow.Handle),
	}}
	if c.o.Render != nil {
		runner.Sources = append(runner.Sources, c.source("render", c.res.Render, c.handlers["render"].Render.Handle))
	}
	name, body := "seeds.txt", []byte(strings.Join(c.web.roots, "\n")+"\n")
	if c.o.Render != nil {
		name, body = "render.yaml", []byte(renderSpec(c.web.roots))
	}
	crawl, err = cli.StartCrawl(ctx, c.be, c.res, name, body)
	if err != nil {
		return "", err
	}
	c.started = c.m.Snapshot()
	stop := func() {}
	if c.o.Progress != nil && c.o.ProgressEvery > 0 {
		stop = localrun.Every(ctx, c.o.ProgressEvery, func() {
			pages, _ := c.web.fetched()
			cost := cost.DefaultPrices().Cost(c.m.Snapshot())
			fmt.Fprintf(c.o.Progress, "%s: %d pages in %v, $%.4f so far\n", c.o.Name, pages, time.Since(start).Round(time.Second), cost.Total)
		})
	}
	err = runner.Run(ctx)
	stop()
	if err != nil {
		return "", fmt.Errorf("crawl: %w", err)
	}
	return crawl, nil
}

// report is what the crawl used: the meter's units, the counters' findings, the site's count of
// the pages it served, and the crawl's own tally.
func (c *costRun) report(ctx context.Context, crawl string, index crawlindex.Result, start time.Time, crawled cost.Units) (Report, error) {
	r := Report{IndexFiles: index.Files, IndexLines: index.Lines, Name: c.o.Name, Hosts: c.web.hosts, Web: c.web.describe, EvenHosts: c.o.Real == nil,
		Ends: c.events.ends(), Pollers: c.o.Pollers, Elapsed: time.Since(start), Units: c.m.Snapshot(),
		Delayed: c.sent.delayed.Load(), Requeued: c.sent.resent(), SQSCalls: c.m.SQSCalls()}
	// The custom metric series the functions' EMF lines named, each for the hours it was written
	// in, pro-rated at the crawl's rate (cost.MetricSeriesHours): no client sees them.
	r.Units.MetricSeriesHours, r.MetricSeries = c.series.seriesHours(start.Add(r.Elapsed))
	r.FirstMessages, r.FirstURLs, r.Groups, r.LoneMessages = c.sent.first()
	r.EarlyEmpty = c.early.takeFrom(&r.Units, r.SQSCalls)
	// The early empty receives all came while the runner ran, between the two snapshots.
	r.Crawled = crawled
	r.Crawled.SQSRequests = max(r.Crawled.SQSRequests-r.EarlyEmpty, 0)
	r.Pages, r.Twice = c.web.fetched()
	if r.Twice > 0 && c.web.twiceList != nil {
		r.TwiceURLs = c.web.twiceList(10)
	}
	if c.web.largest != nil {
		r.Largest = c.web.largest()
	}
	// The tally is the report's, not the crawl's: done with the meter's copy of the clients'
	// config, it would count in the crawl's cost, so it uses an unmetered table.
	var err error
	if r.URLs, err = crawlstate.New(c.quiet.Table).Tally(ctx, crawl); err != nil {
		return Report{}, fmt.Errorf("tally the crawl: %w", err)
	}
	r.Ledger = r.URLs.Cost // what the crawl's record says it cost, booked by its invocations
	r.HotHost, r.HotHostWrites, r.HotOther, r.HotOtherWrites = c.writes.hottest()
	r.HotCrawl, r.HotCrawlWrites = c.writes.hottestOf("crawl")
	r.Writes, r.WriteUnits = c.writes.byKind(), c.writes.writeUnits()
	r.SlotWrites = c.writes.kindByFunction("slot")
	r.Batches = c.batches.counts()
	r.History = c.history
	return r, nil
}

func randomSuffix() (string, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("random name: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
