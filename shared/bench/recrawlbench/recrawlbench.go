// Package recrawlbench measures what an incremental recrawl saves: it crawls the bench's
// generated site (shared/demo/demosite, with ETag and Last-Modified, answering 304 to conditional
// GETs) through the AWS adapters on the local emulators, changes a share of its pages, recrawls it
// as the stack's EventBridge rule does (a scheduled tick to schedule), and reports both crawls'
// requests, bytes and billed units (shared/observe/meter) side by side.
package recrawlbench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/cost"
	"github.com/crawlstack/crawlstack/shared/crawl/layout"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go/logging"

	"github.com/crawlstack/crawlstack/shared/app/cli"
	"github.com/crawlstack/crawlstack/shared/app/pipeline"
	"github.com/crawlstack/crawlstack/shared/bench/costrun"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/records"
	"github.com/crawlstack/crawlstack/shared/demo/demosite"
	"github.com/crawlstack/crawlstack/shared/handler/scheduler"
	"github.com/crawlstack/crawlstack/shared/local/localrun"
	"github.com/crawlstack/crawlstack/shared/observe/meter"
	"github.com/crawlstack/crawlstack/shared/port/blob"
)

// Options describe the measurement.
type Options struct {
	// Pages, Links and PageBytes shape the site, as make bench's (10,000 pages, 20 links, 20 kB).
	Pages, Links, PageBytes int
	// Every: one page in Every is changed between the crawls (each page i with i%Every == 1).
	Every int
	// Concurrency is how many records the local runner works on at once, as crawl run's flag.
	Concurrency int
	// Progress, when set, is told what is going on.
	Progress io.Writer
}

// Figures are what one crawl used.
type Figures struct {
	Crawl string
	// Requests are the page requests the site answered, NotModified how many of them with 304,
	// and Bytes the body bytes it sent.
	Requests, NotModified int
	Bytes                 int64
	// WARCBytes are the bytes of the crawl's WARC files and indexes in the bucket.
	WARCBytes int64
	// Records are the crawl's records, Unchanged those marked unchanged.
	Records, Unchanged int
	// Fetched is the crawl's fetched count (its items).
	Fetched int64
	Units   cost.Units
	Elapsed time.Duration
}

// seedFile is the seed file both crawls read.
const seedFile = "recrawl.txt"

// Run crawls the site, changes one page in o.Every, recrawls it, and returns both crawls' figures.
// cfg must name the emulators' endpoints: the crawls make fresh queues, a table and a bucket.
func Run(ctx context.Context, o Options, cfg aws.Config) (full, again Figures, err error) {
	b := &bench{o: o, m: meter.New()}
	if err := b.open(ctx, cfg); err != nil {
		return full, again, err
	}
	b.site = demosite.New(o.Pages, o.Links, o.PageBytes)
	b.site.Validators = true
	srv := httptest.NewServer(b.site) // 127.0.0.1
	defer srv.Close()
	if err := b.startHandlers(); err != nil {
		return full, again, err
	}
	defer b.hs.Close()

	start := time.Now()
	first, err := cli.StartCrawl(ctx, b.be, b.res, seedFile, []byte(srv.URL+"/\n"))
	if err != nil {
		return full, again, err
	}
	if err := b.run(ctx, first); err != nil {
		return full, again, fmt.Errorf("the full crawl: %w", err)
	}
	if full, err = b.measure(ctx, first, start, cost.Units{}); err != nil {
		return full, again, err
	}
	for i := 0; i < o.Pages; i++ {
		if i%o.Every == 1 {
			b.site.Change(i, false)
		}
	}
	// The first run's pollers may have left a long poll open on the queue emulator (fauxqs keeps a
	// receive the client gave up on, and hands it the next message, which then waits out its
	// visibility timeout): the tick waits out the runner's one-second long poll first.
	select {
	case <-ctx.Done():
		return full, again, ctx.Err()
	case <-time.After(2 * time.Second):
	}
	b.site.ResetTraffic()
	before, start := b.m.Snapshot(), time.Now()
	second, err := b.tick(ctx)
	if err != nil {
		return full, again, err
	}
	if err := b.run(ctx, second); err != nil {
		return full, again, fmt.Errorf("the recrawl: %w", err)
	}
	again, err = b.measure(ctx, second, start, before)
	return full, again, err
}

// bench is one Run: its options, its meter, the adapters, the site and the handlers.
type bench struct {
	o     Options
	m     *meter.Meter
	be    *cli.Backend // metered
	quiet *cli.Backend // the same table, bucket and queues, unmetered: for the figures' own reads
	res   cli.Resources
	site  *demosite.Site
	hs    *pipeline.Handlers
	log   *slog.Logger
}

// open meters a copy of cfg, and sets up a fresh table, bucket and set of queues with it.
func (b *bench) open(ctx context.Context, cfg aws.Config) error {
	cfg.Logger = logging.Nop{} // DynamoDB Local's failed conditions would each log a warning
	unmetered := cfg
	cfg = cfg.Copy()
	b.m.Register(&cfg)
	var r [4]byte
	if _, err := rand.Read(r[:]); err != nil {
		return err
	}
	name := "crawlrecrawl-" + hex.EncodeToString(r[:])
	env := map[string]string{"CRAWL_TABLE": name, "CRAWL_BUCKET": name, "CRAWL_QUEUE_PREFIX": name + "-"}
	b.be = cli.OpenAWSWith(cfg, func(k string) string { return env[k] })
	b.quiet = cli.OpenAWSWith(unmetered, func(k string) string { return env[k] })
	var err error
	if b.res, err = b.be.Setup(ctx, cli.QueueSettings{Visibility: 2 * time.Minute, MaxReceiveCount: 5}); err != nil {
		return fmt.Errorf("set up the queues, table and bucket: %w", err)
	}
	return nil
}

// startHandlers builds the handlers with make bench's settings for a site of our own, and the
// recrawl's prefix of seed files.
func (b *bench) startHandlers() error {
	pc := pipeline.DefaultConfig()
	pc.ScheduleQueue, pc.FetchQueue, pc.ParseQueue = b.res.Schedule, b.res.Fetch, b.res.Parse
	pc.AllowNets = []string{"127.0.0.0/8"}
	pc.HostRPS, pc.HostConcurrency, pc.MaxPagesPerHost, pc.MaxDepth = 0, 0, 0, -1 // make bench's: our own site
	pc.RecrawlPrefix = b.be.SeedsPrefix
	// The handlers' warnings and errors go with the progress: a failure in the measured crawls shows.
	logTo := io.Discard
	if b.o.Progress != nil {
		logTo = b.o.Progress
	}
	b.log = slog.New(slog.NewTextHandler(logTo, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var err error
	b.hs, err = pipeline.New(pc, pipeline.Ports{Queue: b.be.Queue, Table: b.be.Table, Blobs: b.be.Blobs}, b.log)
	return err
}

// run runs the handlers until the queues are empty, metering each batch as an invocation at the
// stack's memory, with the queues' depths every 5 seconds when there is a Progress.
func (b *bench) run(ctx context.Context, crawl string) error {
	r := cli.NewRunner(b.be.Queue, b.res, b.hs, b.o.Concurrency, 2*time.Minute, b.log)
	fns := costrun.StackFunctions()
	for i, s := range r.Sources {
		inner, memory := s.Handler, fns[s.Name].MemoryMB
		r.Sources[i].Handler = func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			start := time.Now()
			defer func() { b.m.AddLambda(time.Since(start), memory) }() // each batch an invocation at the stack's memory
			return inner(ctx, ev)
		}
	}
	stop := func() {}
	if b.o.Progress != nil {
		stop = localrun.Every(ctx, 5*time.Second, func() {
			var depth []string
			for _, q := range []string{b.res.Schedule, b.res.Fetch, b.res.Parse} {
				v, nv, _ := b.quiet.Queue.Depth(ctx, q)
				depth = append(depth, fmt.Sprintf("%d+%d", v, nv))
			}
			fmt.Fprintf(b.o.Progress, "%s: %d page requests so far; schedule, fetch, parse queues (visible+in flight) %s\n",
				crawl, b.site.Traffic().Requests, strings.Join(depth, ", "))
		})
	}
	defer stop()
	return r.Run(ctx)
}

// measure is what the crawl used since start and before: the site's traffic, the meter's units,
// and, read with the unmetered clients, its WARC bytes, records and fetched count.
func (b *bench) measure(ctx context.Context, crawl string, start time.Time, before cost.Units) (Figures, error) {
	f := Figures{Crawl: crawl, Elapsed: time.Since(start), Units: b.m.Snapshot().Sub(before)}
	t := b.site.Traffic()
	f.Requests, f.NotModified, f.Bytes = t.Requests, t.NotModified, t.Bytes
	// Read with the unmetered clients: the figures' own reads are not the crawl's bill.
	var err error
	if f.WARCBytes, err = sizes(ctx, b.quiet.Blobs, layout.PagesDir(crawl)); err != nil {
		return f, err
	}
	if _, err := records.Read(ctx, b.quiet.Blobs, crawl, nil, func(r records.Record) error {
		f.Records++
		if r.Unchanged {
			f.Unchanged++
		}
		return nil
	}); err != nil {
		return f, err
	}
	c, err := crawlstate.New(b.quiet.Table).Tally(ctx, crawl)
	f.Fetched = c.Fetched
	return f, err
}

// tick invokes schedule with a scheduled EventBridge event, as the stack's recrawl rule does, and
// returns the crawl it starts.
func (b *bench) tick(ctx context.Context) (crawl string, err error) {
	tick := time.Now().UTC().Truncate(time.Second)
	ev, err := json.Marshal(events.EventBridgeEvent{Version: "0", ID: "recrawl-bench", DetailType: "Scheduled Event",
		Source: "aws.events", Time: tick, Region: "us-east-1", Detail: json.RawMessage(`{}`)})
	if err != nil {
		return "", err
	}
	if _, err := b.hs.Schedule.Invoke(ctx, ev); err != nil {
		return "", fmt.Errorf("the recrawl tick: %w", err)
	}
	return scheduler.CrawlID("", b.be.SeedsPrefix+seedFile, "tick@"+tick.Format(time.RFC3339)), nil
}

// sizes adds up the bytes of the objects under prefix.
func sizes(ctx context.Context, s blob.Store, prefix string) (int64, error) {
	keys, err := s.List(ctx, prefix)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, k := range keys {
		b, err := s.Get(ctx, k)
		if err != nil {
			return 0, fmt.Errorf("read %s: %w", k, err)
		}
		n += int64(len(b))
	}
	return n, nil
}

// Print writes the two crawls' figures side by side, with the recrawl's share of the full
// crawl's, and their cost at prices p.
func Print(w io.Writer, o Options, full, again Figures, p cost.Prices) {
	fc, ac := p.Cost(full.Units), p.Cost(again.Units)
	ratio := func(a, b float64) string {
		if b == 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f%%", 100*a/b)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "site: %d pages, %d links each, about %d bytes each; 1 page in %d changed between the crawls\n",
		o.Pages, o.Links, o.PageBytes, o.Every)
	fmt.Fprintf(&b, "| | full crawl | recrawl | recrawl / full |\n|---|---:|---:|---:|\n")
	rows := []struct {
		name   string
		f, a   float64
		format string
	}{
		{"page requests", float64(full.Requests), float64(again.Requests), "%.0f"},
		{"answered 304", float64(full.NotModified), float64(again.NotModified), "%.0f"},
		{"body bytes received", float64(full.Bytes), float64(again.Bytes), "%.0f"},
		{"WARC bytes stored", float64(full.WARCBytes), float64(again.WARCBytes), "%.0f"},
		{"records", float64(full.Records), float64(again.Records), "%.0f"},
		{"records marked unchanged", float64(full.Unchanged), float64(again.Unchanged), "%.0f"},
		{"SQS requests", float64(full.Units.SQSRequests), float64(again.Units.SQSRequests), "%.0f"},
		{"DynamoDB write units", full.Units.DynamoDBWriteUnits, again.Units.DynamoDBWriteUnits, "%.0f"},
		{"DynamoDB read units", full.Units.DynamoDBReadUnits, again.Units.DynamoDBReadUnits, "%.0f"},
		{"S3 PUT/LIST", float64(full.Units.S3ClassA), float64(again.Units.S3ClassA), "%.0f"},
		{"S3 GET", float64(full.Units.S3ClassB), float64(again.Units.S3ClassB), "%.0f"},
		{"Lambda GB-s", full.Units.LambdaGBSeconds, again.Units.LambdaGBSeconds, "%.1f"},
		{"cost, $", fc.Total, ac.Total, "%.4f"},
		{"cost, $ per million pages", fc.Total / float64(max(o.Pages, 1)) * 1e6, ac.Total / float64(max(o.Pages, 1)) * 1e6, "%.2f"},
		{"elapsed, s", full.Elapsed.Seconds(), again.Elapsed.Seconds(), "%.0f"},
	}
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | "+r.format+" | "+r.format+" | %s |\n", r.name, r.f, r.a, ratio(r.a, r.f))
	}
	fmt.Fprintf(&b, "recrawl: %d of %d records unchanged; %d fetched by its items\n", again.Unchanged, again.Records, again.Fetched)
	io.WriteString(w, b.String())
}
