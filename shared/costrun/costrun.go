// Package costrun measures what a crawl costs on AWS: it crawls a generated web of many hosts
// (shared/multisite) through the AWS adapters, on whatever endpoints the SDK configuration names
// (the local emulators for `make cost`), with the three handlers driven as the stack's event
// source mappings drive them, and meters every billed unit on the way (shared/meter): the SDK's
// calls, each invocation's duration at the function's memory, and the log bytes. It also counts
// the writes each table item receives, to find hot keys.
package costrun

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go/logging"

	"github.com/crawlstack/crawlstack/shared/cli"
	"github.com/crawlstack/crawlstack/shared/crawlindex"
	"github.com/crawlstack/crawlstack/shared/crawlstate"
	"github.com/crawlstack/crawlstack/shared/ledger"
	"github.com/crawlstack/crawlstack/shared/localrun"
	"github.com/crawlstack/crawlstack/shared/message"
	"github.com/crawlstack/crawlstack/shared/meter"
	"github.com/crawlstack/crawlstack/shared/multisite"
	"github.com/crawlstack/crawlstack/shared/pipeline"
	"github.com/crawlstack/crawlstack/shared/queue"
	"github.com/crawlstack/crawlstack/shared/table"
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
	Units        meter.Units
	// IndexFiles and IndexLines are what the crawl's CDXJ index took in: its WARC files and their
	// response records (none when each file was stored with its own index).
	IndexFiles, IndexLines int
	// SQSCalls are the SQS requests by call and queue (meter.Meter.SQSCalls).
	SQSCalls map[string]int64
	// Ledger is the crawl's own bill, as its record holds it (package ledger): the units its
	// handlers' invocations booked, which leaves out the set-up (queues, table, bucket) and the
	// pollers' receives between invocations.
	Ledger meter.Units
	// EarlyEmpty counts the empty receives the emulator answered before their wait was over,
	// which SQS never does: left out of Units and SQSCalls (see earlyEmpty).
	EarlyEmpty int64
	// Delayed counts the fetch messages sent with a delay: to the politeness slot booked for them
	// at admission, or re-sent to wait again.
	Delayed int64
	// Requeued counts the fetch messages sent again for a URL (politeness waits and retries).
	Requeued int64
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
	writes := &keyWrites{Table: be.Table}
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
			c := meter.DefaultPrices().Cost(m.Snapshot())
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

// keyWrites counts the writes each table item receives, and each function's by kind of item.
type keyWrites struct {
	table.Table
	mu   sync.Mutex
	n    map[string]int64
	byFn map[string]map[string]int64 // function -> kind (kindOf) -> writes
}

func (k *keyWrites) count(fn, key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.n == nil {
		k.n, k.byFn = map[string]int64{}, map[string]map[string]int64{}
	}
	k.n[key]++
	if fn != "" {
		if k.byFn[fn] == nil {
			k.byFn[fn] = map[string]int64{}
		}
		k.byFn[fn][kindOf(key)]++
	}
}

// of returns the table as the function fn writes it, its writes counted as fn's too.
func (k *keyWrites) of(fn string) table.Table { return fnWrites{Table: k.Table, k: k, fn: fn} }

// kindByFunction returns each function's writes to items of the kind.
func (k *keyWrites) kindByFunction(kind string) map[string]int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := map[string]int64{}
	for fn, kinds := range k.byFn {
		if n := kinds[kind]; n > 0 {
			out[fn] = n
		}
	}
	return out
}

// fnWrites is the table of one function: keyWrites that also knows whose writes they are.
type fnWrites struct {
	table.Table // the table under keyWrites: reads pass through
	k           *keyWrites
	fn          string
}

func (f fnWrites) Put(ctx context.Context, key string, it table.Item, c table.Cond) error {
	f.k.count(f.fn, key)
	return f.Table.Put(ctx, key, it, c)
}

func (f fnWrites) Update(ctx context.Context, key string, u table.Update, c table.Cond) (table.Item, error) {
	f.k.count(f.fn, key)
	return f.Table.Update(ctx, key, u, c)
}

func (f fnWrites) Delete(ctx context.Context, key string, c table.Cond) error {
	f.k.count(f.fn, key)
	return f.Table.Delete(ctx, key, c)
}

func (k *keyWrites) Put(ctx context.Context, key string, it table.Item, c table.Cond) error {
	k.count("", key)
	return k.Table.Put(ctx, key, it, c)
}

func (k *keyWrites) Update(ctx context.Context, key string, u table.Update, c table.Cond) (table.Item, error) {
	k.count("", key)
	return k.Table.Update(ctx, key, u, c)
}

func (k *keyWrites) Delete(ctx context.Context, key string, c table.Cond) error {
	k.count("", key)
	return k.Table.Delete(ctx, key, c)
}

// perHost reports whether key is an item of one host: its politeness slot ("p#host") or its
// budget in a crawl ("b#crawl#host"). Their writes are bounded by the host's rate.
func perHost(key string) bool { return strings.HasPrefix(key, "p#") || strings.HasPrefix(key, "b#") }

// byKind returns the writes by kind of item, as the table's keys tell them: "url" (u#),
// "outcomes" (r#, a fetch message's URLs' outcomes), "slot" (p#, a host's politeness slot), "host
// budget" (b#), "crawl" (c#) and "other".
func (k *keyWrites) byKind() map[string]int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := map[string]int64{}
	for key, n := range k.n {
		out[kindOf(key)] += n
	}
	return out
}

func kindOf(key string) string {
	switch {
	case strings.HasPrefix(key, "u#"):
		return "url"
	case strings.HasPrefix(key, "r#"):
		return "outcomes"
	case strings.HasPrefix(key, "p#"):
		return "slot"
	case strings.HasPrefix(key, "b#"):
		return "host budget"
	case strings.HasPrefix(key, "c#"):
		return "crawl"
	}
	return "other"
}

// hottestOf returns the item of the kind (see kindOf) that took the most writes.
func (k *keyWrites) hottestOf(kind string) (key string, n int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for kk, nn := range k.n {
		if kindOf(kk) == kind && nn > n {
			key, n = kk, nn
		}
	}
	return key, n
}

// hottest returns the per-host item and the other item that took the most writes.
func (k *keyWrites) hottest() (host string, hostN int64, other string, otherN int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for key, n := range k.n {
		switch {
		case perHost(key) && n > hostN:
			host, hostN = key, n
		case !perHost(key) && n > otherN:
			other, otherN = key, n
		}
	}
	return host, hostN, other, otherN
}

// fetchSends counts the fetch messages: those sent with a delay (to wait for a politeness slot
// booked at admission, or re-sent to wait again), and the re-sends, which are the sends of a URL's
// message after its first.
type fetchSends struct {
	queue.Sender
	queue   string
	delayed atomic.Int64
	mu      sync.Mutex
	sends   map[string]int64 // URL -> its fetch messages sent
}

func (d *fetchSends) SendBatch(ctx context.Context, q string, entries []queue.Entry) error {
	err := d.Sender.SendBatch(ctx, q, entries)
	if q != d.queue {
		return err
	}
	var be *queue.BatchError
	errors.As(err, &be)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.sends == nil {
		d.sends = map[string]int64{}
	}
	for _, e := range entries {
		if (err != nil && be == nil) || (be != nil && be.Failed[e.ID] != nil) {
			continue // not sent
		}
		if e.Delay > 0 {
			d.delayed.Add(1)
		}
		if m, derr := message.DecodeFetch(e.Body); derr == nil {
			for _, u := range m.URLList() {
				d.sends[u]++
			}
		}
	}
	return err
}

// resent is how many fetch messages were sent for a URL that had one already.
func (d *fetchSends) resent() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	var n int64
	for _, c := range d.sends {
		n += c - 1
	}
	return n
}

// earlyEmpty counts the runner's receives that came back empty before their long poll's wait
// was over. SQS answers a long poll with nothing only once its wait time has passed ("Amazon SQS
// short and long polling" in the SQS developer guide); fauxqs answers every waiting receive of a
// queue as soon as a message arrives, one with the message and the rest empty, so a poller waiting
// on a busy queue sends a receive for nearly every message that others take. Those receives would
// not be made against SQS, and are taken out of the bill.
type earlyEmpty struct {
	mu      sync.Mutex
	byQueue map[string]int64
}

// earlySlack is how much sooner than its wait an empty answer may come and still count as a
// wait that ran out (the wait is in whole seconds on the wire).
const earlySlack = 250 * time.Millisecond

func (e *earlyEmpty) wrap(q localrun.Queues) localrun.Queues { return earlyQueues{Queues: q, e: e} }

type earlyQueues struct {
	localrun.Queues
	e *earlyEmpty
}

func (q earlyQueues) Receive(ctx context.Context, name string, max int, visibility, wait time.Duration) ([]queue.Message, error) {
	start := time.Now()
	msgs, err := q.Queues.Receive(ctx, name, max, visibility, wait)
	if err == nil && len(msgs) == 0 && ctx.Err() == nil && wait >= time.Second && time.Since(start) < wait-earlySlack {
		q.e.mu.Lock()
		if q.e.byQueue == nil {
			q.e.byQueue = map[string]int64{}
		}
		q.e.byQueue[name]++
		q.e.mu.Unlock()
	}
	return msgs, err
}

// takeFrom takes the early empty receives out of u and calls, and returns how many there were.
func (e *earlyEmpty) takeFrom(u *meter.Units, calls map[string]int64) int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	var n int64
	for q, k := range e.byQueue {
		n += k
		call := "ReceiveMessage " + q[strings.LastIndexAny(q, "/-")+1:]
		calls[call] = max(calls[call]-k, 0)
	}
	u.SQSRequests = max(u.SQSRequests-n, 0)
	return n
}

// depthUnmetered is the runner's queues with their depth read on an unmetered client: the runner
// looks at the queues' depths to find the end of the crawl, which an event source mapping never
// does, so those requests are no part of what the stack would pay. Its receives and deletes are
// the mapping's, and are metered.
type depthUnmetered struct {
	localrun.Queues
	depth localrun.Queues
}

func (d depthUnmetered) Depth(ctx context.Context, q string) (int, int, error) {
	return d.depth.Depth(ctx, q)
}

// logBytes is the handlers' log destination: it meters the bytes CloudWatch Logs would ingest.
type logBytes struct{ m *meter.Meter }

func (l *logBytes) Write(p []byte) (int, error) {
	l.m.AddLogBytes(len(p))
	return len(p), nil
}
