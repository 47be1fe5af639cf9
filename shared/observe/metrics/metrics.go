// Package metrics records the crawl's OpenTelemetry metrics (pages by outcome, fetches, admissions,
// politeness waits, requeues, message age, billed units) through the OTel metric API alone, so that
// the crawl domain and the handlers can count without linking an SDK or an exporter. Until a
// provider is installed (UseMeter, which observe/telemetry's Setup calls) every helper returns at
// once.
package metrics

import (
	"context"
	"strings"
	"sync/atomic"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/cost"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// The crawl's instruments, made on the meter provider that Setup (or a test) installs. With none
// installed the helpers below return at once, without building attributes.
type instruments struct {
	pages         metric.Int64Counter              // crawl.pages{outcome, class}
	refusals      metric.Int64Counter              // crawl.refusals{class}
	fetches       metric.Int64Counter              // crawl.fetches{kind, class}
	fetchBytes    metric.Int64Counter              // crawl.fetch.bytes
	fetchDuration metric.Float64Histogram          // crawl.fetch.duration, s
	admissions    metric.Int64Counter              // crawl.admissions
	dedupHits     metric.Int64Counter              // crawl.dedup.hits{layer}
	waits         metric.Int64Counter              // crawl.politeness.waits
	waitTime      metric.Float64Counter            // crawl.politeness.wait_time, s
	requeues      metric.Int64Counter              // crawl.requeues{reason}
	messageAge    metric.Float64Histogram          // crawl.message.age{queue}, s
	costUnits     map[string]metric.Float64Counter // crawl.cost.<unit>, by unit name
	stalls        metric.Int64Counter              // crawl.stalls
}

// ScopeName names the crawler's meter (and observe/telemetry's tracer).
const ScopeName = "github.com/crawlstack/crawlstack"

var (
	inst        atomic.Pointer[instruments] // nil: metrics are off
	emptyAttrs  = metric.WithAttributes()
	secondsHist = []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600}
)

// Enabled reports whether metrics are being recorded.
func Enabled() bool { return inst.Load() != nil }

func meters() *instruments { return inst.Load() }

// UseMeter makes the crawl's instruments on mp and turns metrics on. It returns a function that
// turns them off again (tests call UseMeter with a provider over their own reader).
func UseMeter(mp metric.MeterProvider) (restore func()) {
	prev := inst.Load()
	inst.Store(newInstruments(mp.Meter(ScopeName)))
	return func() { inst.Store(prev) }
}

func newInstruments(m metric.Meter) *instruments {
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, _ := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		return c
	}
	seconds := func(name, desc string) metric.Float64Counter {
		c, _ := m.Float64Counter(name, metric.WithUnit("s"), metric.WithDescription(desc))
		return c
	}
	histogram := func(name, desc string) metric.Float64Histogram {
		h, _ := m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(secondsHist...))
		return h
	}
	// One metric per billed unit, not one with a unit attribute: in EMF an attribute set is a line of
	// its own, and the eight units then share the function's line.
	units := map[string]metric.Float64Counter{}
	for _, u := range CostUnitNames {
		units[u], _ = m.Float64Counter("crawl.cost."+u, metric.WithUnit("{unit}"),
			metric.WithDescription("billed "+u+" metered on the SDK clients (package meter)"))
	}
	return &instruments{
		pages:         counter("crawl.pages", "{page}", "URLs that reached a terminal state, by outcome (fetched, skipped, failed, stopped) and error class"),
		refusals:      counter("crawl.refusals", "{url}", "links not admitted because the crawl's budget is spent (class budget) or it was stopped (class stopped)"),
		fetches:       counter("crawl.fetches", "{request}", "outbound fetches (pages and robots.txt files), by kind and error class (\"\" for a 1xx-3xx answer)"),
		fetchBytes:    counter("crawl.fetch.bytes", "By", "body bytes fetched, decoded"),
		fetchDuration: histogram("crawl.fetch.duration", "time of one fetch, redirects and body included"),
		admissions:    counter("crawl.admissions", "{url}", "URLs admitted to a crawl and staged for a fetch message"),
		dedupHits:     counter("crawl.dedup.hits", "{url}", "links dropped as already known, by the layer that knew them (memory, table)"),
		waits:         counter("crawl.politeness.waits", "{wait}", "waits in place for a host's politeness slot"),
		waitTime:      seconds("crawl.politeness.wait_time", "time spent waiting in place for politeness slots"),
		requeues:      counter("crawl.requeues", "{message}", "fetch messages sent back with a delay, by reason (slot, wait, retry)"),
		messageAge:    histogram("crawl.message.age", "time from a message's send to its record's start"),
		costUnits:     units,
		stalls:        counter("crawl.stalls", "{crawl}", "crawls announced stalled: their work stopped moving with work left (package finish)"),
	}
}

// CountStates records counter increments as a crawl's state store makes them ("fetched": 1,
// "class_robots": 1 ...): the terminal outcomes become crawl.pages, by the increment's class when it
// has one; a link refused for a spent budget or a stopped crawl (a class with no outcome) becomes
// crawl.refusals. Other keys (seen, parse errors, ledger units) and decrements are not pages.
func CountStates(ctx context.Context, add map[string]int64) {
	if !Enabled() {
		return
	}
	class := ""
	for k, v := range add {
		if c, ok := strings.CutPrefix(k, "class_"); ok && v > 0 {
			class = c
		}
	}
	outcome := false
	for k, v := range add {
		switch k {
		case "fetched", "skipped", "failed", "stopped":
			if v > 0 {
				outcome = true
				meters().pages.Add(ctx, v, metric.WithAttributes(attribute.String("outcome", k), attribute.String("class", class)))
			}
		}
	}
	if !outcome && (class == "budget" || class == "stopped") {
		meters().refusals.Add(ctx, add["class_"+class], metric.WithAttributes(attribute.String("class", class)))
	}
}

// Stalled counts a crawl announced stalled; the stack's CrawlStalled alarm watches it.
func Stalled(ctx context.Context) {
	if Enabled() {
		meters().stalls.Add(ctx, 1)
	}
}

// Admitted counts n URLs admitted to a crawl.
func Admitted(ctx context.Context, n int) {
	if Enabled() && n > 0 {
		meters().admissions.Add(ctx, int64(n))
	}
}

// DedupHits counts n links dropped as known by layer ("memory": the frontier's warm cache of
// confirmed URLs; "table": the table, after the Bloom filter or its conditional write).
func DedupHits(ctx context.Context, layer string, n int) {
	if Enabled() && n > 0 {
		meters().dedupHits.Add(ctx, int64(n), metric.WithAttributes(attribute.String("layer", layer)))
	}
}

// PolitenessWait counts a wait in place of d for a host's slot.
func PolitenessWait(ctx context.Context, d time.Duration) {
	if Enabled() && d > 0 {
		meters().waits.Add(ctx, 1)
		meters().waitTime.Add(ctx, d.Seconds())
	}
}

// Requeued counts a fetch message sent back to wait: for its politeness slot ("slot"), for a
// retry ("retry"), or for a fresh invocation or a host's turn ("wait").
func Requeued(ctx context.Context, reason string) {
	if Enabled() {
		meters().requeues.Add(ctx, 1, metric.WithAttributes(attribute.String("reason", reason)))
	}
}

// CostUnitNames are the billed units, each counted as crawl.cost.<name>.
var CostUnitNames = []string{"sqs_requests", "ddb_read_units", "ddb_write_units", "s3_class_a", "s3_class_b",
	"lambda_requests", "lambda_gb_seconds", "log_bytes"}

// CostUnits records the billed units of one invocation (package meter).
func CostUnits(ctx context.Context, u cost.Units) {
	if !Enabled() {
		return
	}
	values := []float64{float64(u.SQSRequests), u.DynamoDBReadUnits, u.DynamoDBWriteUnits, float64(u.S3ClassA),
		float64(u.S3ClassB), float64(u.LambdaRequests), u.LambdaGBSeconds, float64(u.LogBytes)}
	for i, name := range CostUnitNames {
		if values[i] > 0 {
			meters().costUnits[name].Add(ctx, values[i], emptyAttrs)
		}
	}
}

// MessageAge records how long a record waited in its queue.
func MessageAge(ctx context.Context, queue string, sentAt time.Time) {
	if Enabled() && !sentAt.IsZero() {
		meters().messageAge.Record(ctx, max(time.Since(sentAt).Seconds(), 0), metric.WithAttributes(attribute.String("queue", queue)))
	}
}

// Fetched records one outbound fetch.
func Fetched(ctx context.Context, kind, class string, bytes int, d time.Duration) {
	if !Enabled() {
		return
	}
	m := meters()
	m.fetches.Add(ctx, 1, metric.WithAttributes(attribute.String("kind", kind), attribute.String("class", class)))
	m.fetchBytes.Add(ctx, int64(bytes), emptyAttrs)
	m.fetchDuration.Record(ctx, d.Seconds(), emptyAttrs)
}

// Off turns metrics off (observe/telemetry's Stop, before it shuts its provider down).
func Off() { inst.Store(nil) }
