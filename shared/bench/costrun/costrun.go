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
	"strings"
	"sync"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/cost"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go/logging"

	"github.com/crawlstack/crawlstack/shared/app/cli"
	"github.com/crawlstack/crawlstack/shared/app/pipeline"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/demo/multisite"
	"github.com/crawlstack/crawlstack/shared/local/localrun"
	"github.com/crawlstack/crawlstack/shared/observe/ledger"
	"github.com/crawlstack/crawlstack/shared/observe/meter"
	"github.com/crawlstack/crawlstack/shared/ops/crawlindex"
)

// Function is what the stack gives one function (infra/crawlstack.FunctionConfig, field for
// field): its timeout and memory, how many batches it works on at once (the event source mapping's
// maximum concurrency), its batch size and batching window, and how many records of a batch it
// works on at once.
type Function struct {
	TimeoutSeconds, MemoryMB, MaxConcurrency, BatchSize, BatchWindowSeconds, BatchConcurrency int
}

// StackFunctions are the stack's default function settings (infra/crawlstack.DefaultFunctions,
// which sits in a module of its own). Both modules' tests hold their defaults against one copy,
// infra/crawlstack/testdata/function-defaults.json: change the three together.
func StackFunctions() map[string]Function {
	return map[string]Function{
		"schedule": {TimeoutSeconds: 60, MemoryMB: 256, MaxConcurrency: 2, BatchSize: 100, BatchWindowSeconds: 2, BatchConcurrency: 10},
		"fetch":    {TimeoutSeconds: 120, MemoryMB: 512, MaxConcurrency: 2, BatchSize: 100, BatchWindowSeconds: 2, BatchConcurrency: 100},
		"parse":    {TimeoutSeconds: 60, MemoryMB: 512, MaxConcurrency: 2, BatchSize: 100, BatchWindowSeconds: 2, BatchConcurrency: 10},
	}
}

// lambdaPoll is how long an event source mapping's poller waits in a receive (SQS long polling at
// its longest, 20 s): the empty receives of a queue with little in it are metered as Lambda makes them.
const lambdaPoll = 20 * time.Second

// lambdaReportBytes is what Lambda itself logs for each invocation: nothing at the stack's
// system log level, WARN (infra's systemLogLevel), where it writes no START or REPORT line;
// ledger.LambdaReportBytes at Lambda's default, INFO.
const lambdaReportBytes = 0

// Options describe one measured crawl.
type Options struct {
	// Name says which crawl this is in the report ("wide", "single host").
	Name string
	// Web is the generated web to crawl; every host's root is a seed.
	Web multisite.Options
	// Pipeline is the crawl's configuration (the stack's: pipeline.DefaultConfig); its queues are
	// set by Run, and it must allow the loopback web (AllowNets 127.0.0.0/8).
	Pipeline pipeline.Config
	// Functions are the three functions' settings (StackFunctions when nil).
	Functions map[string]Function
	// Visibility is the queues' visibility timeout.
	Visibility time.Duration
	// Progress, when set, receives a line every ProgressEvery.
	Progress      io.Writer
	ProgressEvery time.Duration
}

// Report is what one measured crawl used.
type Report struct {
	Name string
	// Pages is how many pages were fetched, and Twice how many of them more than once.
	Pages, Twice int
	Hosts        int
	Elapsed      time.Duration
	Units        cost.Units
	// IndexFiles and IndexLines are what the crawl's CDXJ index took in: its WARC files and their
	// response records (none when each file was stored with its own index).
	IndexFiles, IndexLines int
	// SQSCalls are the SQS requests by call and queue (meter.Meter.SQSCalls).
	SQSCalls map[string]int64
	// Ledger is the crawl's own bill, as its record holds it (package ledger): the units its
	// handlers' invocations booked, which leaves out the set-up (queues, table, bucket) and the
	// pollers' receives between invocations.
	Ledger cost.Units
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
	// Writes are the table writes (attempts, failed conditions included) by kind of item.
	Writes map[string]int64
	// SlotWrites are the politeness slots' writes by function: schedule's bookings as it admits,
	// fetch's for a message that came without a slot, or too late for its own.
	SlotWrites map[string]int64
	// Batches are the invocations of each function and the records they were given.
	Batches map[string]Batches
}

// Batches counts one function's invocations and the records they were given.
type Batches struct{ Invocations, Records int64 }

// Run crawls o.Web through the AWS adapters built from cfg (a copy of it is metered) in a fresh
// table, bucket and set of queues, and reports what the crawl used.
func Run(ctx context.Context, o Options, cfg aws.Config) (Report, error) {
	fns := o.Functions
	if fns == nil {
		fns = StackFunctions()
	}
	m := meter.New()
	// DynamoDB Local answers a failed condition with a wrong checksum, and the SDK would log a
	// warning for each of thousands: say nothing, the meter counts them.
	cfg.Logger = logging.Nop{}
	unmetered := cfg
	cfg = cfg.Copy()
	m.Register(&cfg)
	suffix, err := randomSuffix()
	if err != nil {
		return Report{}, err
	}
	name := "crawlcost-" + suffix
	env := map[string]string{"CRAWL_TABLE": name, "CRAWL_BUCKET": name, "CRAWL_QUEUE_PREFIX": name + "-"}
	be := cli.OpenAWSWith(cfg, func(k string) string { return env[k] })
	res, err := be.Setup(ctx, cli.QueueSettings{Visibility: o.Visibility, MaxReceiveCount: 5})
	if err != nil {
		return Report{}, fmt.Errorf("set up the queues, table and bucket: %w", err)
	}
	web, err := multisite.Start(o.Web)
	if err != nil {
		return Report{}, err
	}
	defer web.Close()

	pc := o.Pipeline
	pc.ScheduleQueue, pc.FetchQueue, pc.ParseQueue = res.Schedule, res.Fetch, res.Parse
	pc.SlotLead = time.Duration(fns["fetch"].BatchWindowSeconds) * time.Second // CRAWL_SLOT_LEAD in the stack
	writes := &keyWrites{t: be.Table}
	sent := &fetchSends{Sender: be.Queue, queue: res.Fetch}
	logs := &logBytes{m: m}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	// Each function has handlers of its own, as each Lambda function runs in processes of its
	// own, with its own batch concurrency (CRAWL_BATCH_CONCURRENCY on AWS).
	handlers := map[string]*pipeline.Handlers{}
	for _, fn := range []string{"schedule", "fetch", "parse"} {
		fc := pc
		fc.BatchConcurrency = max(fns[fn].BatchConcurrency, 1)
		hs, err := pipeline.New(fc, pipeline.Ports{Queue: sent, Table: writes.of(fn), Blobs: be.Blobs}, log)
		if err != nil {
			return Report{}, err
		}
		defer hs.Close()
		handlers[fn] = hs
	}
	var batchMu sync.Mutex
	batches := map[string]Batches{}
	invoke := func(fn string, h localrun.Invoke) localrun.Invoke {
		f := fns[fn]
		return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			batchMu.Lock()
			b := batches[fn]
			b.Invocations++
			b.Records += int64(len(ev.Records))
			batches[fn] = b
			batchMu.Unlock()
			// Lambda's deadline: the fetch handler leaves GETs it has no time for to a later batch.
			if f.TimeoutSeconds > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, time.Duration(f.TimeoutSeconds)*time.Second)
				defer cancel()
			}
			start := time.Now()
			resp, err := h(ctx, ev)
			m.AddLambda(time.Since(start), f.MemoryMB)
			m.AddLogBytes(lambdaReportBytes)
			return resp, err
		}
	}
	src := func(fn, q string, h localrun.Invoke) localrun.Source {
		f := fns[fn]
		// Each invocation keeps the crawl's ledger, as the Lambda mains do (awsports.NewFunction):
		// the ledger's own table write is part of the bill.
		l := &ledger.Ledger{State: handlers[fn].State, MemoryMB: f.MemoryMB, ReportBytes: lambdaReportBytes, Log: log}
		return localrun.Source{Name: fn, Queue: q, Handler: invoke(fn, localrun.Invoke(l.Wrap(ledger.Handler(h)))), Pollers: f.MaxConcurrency,
			BatchSize: f.BatchSize, Window: time.Duration(f.BatchWindowSeconds) * time.Second, Visibility: o.Visibility,
			Poll: lambdaPoll}
	}
	quiet := cli.OpenAWSWith(unmetered, func(k string) string { return env[k] })
	early := &earlyEmpty{}
	runner := &localrun.Runner{Queues: depthUnmetered{Queues: early.wrap(be.Queue), depth: quiet.Queue}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Sources: []localrun.Source{
		src("schedule", res.Schedule, handlers["schedule"].Schedule.Handle),
		src("fetch", res.Fetch, handlers["fetch"].Fetch.Handle),
		src("parse", res.Parse, handlers["parse"].Parse.Handle),
	}}

	start := time.Now()
	crawl, err := cli.StartCrawl(ctx, be, res, "seeds.txt", []byte(strings.Join(web.Roots, "\n")+"\n"))
	if err != nil {
		return Report{}, err
	}
	stop := func() {}
	if o.Progress != nil && o.ProgressEvery > 0 {
		stop = localrun.Every(ctx, o.ProgressEvery, func() {
			pages, _ := web.Fetched()
			c := cost.DefaultPrices().Cost(m.Snapshot())
			fmt.Fprintf(o.Progress, "%s: %d pages in %v, $%.4f so far\n", o.Name, pages, time.Since(start).Round(time.Second), c.Total)
		})
	}
	err = runner.Run(ctx)
	stop()
	if err != nil {
		return Report{}, fmt.Errorf("crawl: %w", err)
	}
	var index crawlindex.Result
	if o.Pipeline.WARCIndex == pipeline.IndexPerCrawl {
		// The crawl's CDXJ index, built from its WARC files as `crawl index` builds it: its reads
		// and its PUT are part of the bill.
		if index, err = crawlindex.Build(ctx, be.Blobs, crawl, nil); err != nil {
			return Report{}, fmt.Errorf("index the crawl: %w", err)
		}
	}
	r := Report{IndexFiles: index.Files, IndexLines: index.Lines, Name: o.Name, Hosts: o.Web.Hosts, Elapsed: time.Since(start), Units: m.Snapshot(),
		Delayed: sent.delayed.Load(), Requeued: sent.resent(), SQSCalls: m.SQSCalls()}
	r.FirstMessages, r.FirstURLs, r.Groups = sent.first()
	r.EarlyEmpty = early.takeFrom(&r.Units, r.SQSCalls)
	r.Pages, r.Twice = web.Fetched()
	// The tally reads the whole table: done with the meter's copy of the clients' config, it
	// would count in the crawl's cost, so it uses an unmetered table.
	if r.URLs, err = crawlstate.New(quiet.Table).Tally(ctx, crawl); err != nil {
		return Report{}, fmt.Errorf("tally the crawl: %w", err)
	}
	r.Ledger = r.URLs.Cost // what the crawl's record says it cost, booked by its invocations
	r.HotHost, r.HotHostWrites, r.HotOther, r.HotOtherWrites = writes.hottest()
	r.HotCrawl, r.HotCrawlWrites = writes.hottestOf("crawl")
	r.Writes = writes.byKind()
	r.SlotWrites = writes.kindByFunction("slot")
	batchMu.Lock()
	r.Batches = batches
	batchMu.Unlock()
	return r, nil
}

func randomSuffix() (string, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("random name: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
