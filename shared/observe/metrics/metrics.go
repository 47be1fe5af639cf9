// Package metrics records the crawl's OpenTelemetry metrics through the OTel metric API alone, so
// that the crawl domain and the handlers can count without linking an SDK or an exporter. Until a
// provider is installed (UseMeter, which observe/telemetry's Setup calls) every helper returns at
// once.
//
// A custom metric series is billed by the hour in CloudWatch, for every distinct name and set of
// dimension values, in every hour a value comes. So the metrics are few and carry no attributes,
// and they are the ones that need a series: what an alarm watches, and what no log line can chart
// (the fetch latency's percentiles). A stack writes the Series below and no others, however many
// crawls run and whatever their pages' error classes; while a crawl runs, only Steady.
//
// The rest is kept in a Breakdown, which the ledger writes in its line at the end of each
// invocation (a log line, charted and queried with CloudWatch Logs Insights: docs/operating.md):
// pages by outcome and class and in all (pages.terminal), fetches by kind and class and the body
// bytes fetched, requeues by reason, dedup hits by layer, politeness waits, message age by queue,
// and the URLs admitted. The invocation's metered cost is the line's own usd field.
package metrics

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"
)

// The names of the crawl's metrics: Series lists them all.
const (
	BudgetRefusals = "crawl.budget.refusals" // links refused because the crawl's budget is spent
	FetchDuration  = "crawl.fetch.duration"  // time of one fetch (histogram)
	Stalls         = "crawl.stalls"          // crawls announced stalled
)

// Series are the metric series the crawler writes: each name once, with no dimension. The stack's
// alarms and dashboard read only these (infra/crawlstack/testdata/metric-series.json holds the same
// list for the stack's tests), and a stack pays for at most len(Series) custom metric series.
// Admissions, requeues and fetched bytes were series too until issue 43's first cut, and the
// terminal pages (crawl.pages) and the metered cost (crawl.cost) until its last: written in every
// invocation, each cost $0.30 a month, by the hour, while crawls ran. They chart as well from the
// invocation lines (the dashboard's Logs Insights widgets), and per crawl, which a series with no
// dimension cannot.
var Series = []string{BudgetRefusals, FetchDuration, Stalls}

// Steady are the series that every running crawl writes, hour after hour: what a crawl's budget
// counts for its time (crawlstate.WithMetricSeries). The others come only with what they count: a
// crawl over its budget, or stalled.
var Steady = []string{FetchDuration}

// The crawl's instruments, made on the meter provider that Setup (or a test) installs. With none
// installed the helpers below return at once.
type instruments struct {
	refusals, stalls metric.Int64Counter
	fetchDuration    metric.Float64Histogram
}

// ScopeName names the crawler's meter (and observe/telemetry's tracer).
const ScopeName = "github.com/crawlstack/crawlstack"

var (
	inst        atomic.Pointer[instruments] // nil: metrics are off
	noAttrs     = metric.WithAttributes()
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
	h, _ := m.Float64Histogram(FetchDuration, metric.WithUnit("s"), metric.WithDescription("time of one fetch, redirects and body included"),
		metric.WithExplicitBucketBoundaries(secondsHist...))
	return &instruments{
		refusals:      counter(BudgetRefusals, "{url}", "links not admitted because the crawl's budget is spent"),
		fetchDuration: h,
		stalls:        counter(Stalls, "{crawl}", "crawls announced stalled: their work stopped moving with work left (package finish)"),
	}
}

// CountStates records counter increments as a crawl's state store makes them ("fetched": 1,
// "class_robots": 1 ...): the terminal outcomes become the breakdown's pages, by outcome and class
// and in all (pages.terminal, which the dashboard charts); a link refused for a spent budget
// (class budget with no outcome) becomes crawl.budget.refusals, and one refused by a stopped crawl
// a refusal in the breakdown. Other keys (seen, parse errors, ledger units) and decrements are not
// pages.
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
				breakdown.add("pages", join(k, class), float64(v))
				breakdown.add("pages", "terminal", float64(v))
			}
		}
	}
	if n := add["robots_refused"]; n > 0 {
		breakdown.add("refusals", "robots", float64(n)) // links parse refused (crawlstate.CountRobotsRefused)
	}
	if !outcome && (class == "budget" || class == "stopped") {
		n := add["class_"+class]
		breakdown.add("refusals", class, float64(n))
		if class == "budget" {
			meters().refusals.Add(ctx, n, noAttrs)
		}
	}
}

// join names a breakdown's key by its parts, leaving out the empty ones ("fetched", "skipped_robots").
func join(parts ...string) string {
	var kept []string
	for _, p := range parts {
		if p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, "_")
}

// Stalled counts a crawl announced stalled; the stack's CrawlStalled alarm watches it.
func Stalled(ctx context.Context) {
	if Enabled() {
		meters().stalls.Add(ctx, 1, noAttrs)
	}
}

// Admitted counts, in the breakdown, n URLs admitted to a crawl and staged for a fetch message.
func Admitted(_ context.Context, n int) {
	if Enabled() && n > 0 {
		breakdown.add("admission", "admitted", float64(n))
	}
}

// DedupHits counts, in the breakdown, n links dropped as known by layer ("memory": the frontier's
// warm cache of confirmed URLs; "table": the table, after the Bloom filter or its conditional
// write).
func DedupHits(_ context.Context, layer string, n int) {
	if Enabled() && n > 0 {
		breakdown.add("admission", join("known", layer), float64(n))
	}
}

// PolitenessWait counts, in the breakdown, a wait in place of d for a host's slot.
func PolitenessWait(_ context.Context, d time.Duration) {
	if Enabled() && d > 0 {
		breakdown.add("politeness", "waits", 1)
		breakdown.add("politeness", "wait_s", d.Seconds())
	}
}

// Requeued counts, in the breakdown, a fetch message sent back to wait by its reason: for its
// politeness slot ("slot"), for a retry ("retry"), or for a fresh invocation or a host's turn
// ("wait").
func Requeued(_ context.Context, reason string) {
	if Enabled() {
		breakdown.add("requeues", reason, 1)
	}
}

// MessageAge records, in the breakdown, how long a record waited in its queue: the longest wait
// of the queue's records ("<queue>_max_s"; AWS/SQS ApproximateAgeOfOldestMessage charts a queue's
// age at no charge).
func MessageAge(_ context.Context, queue string, sentAt time.Time) {
	if Enabled() && !sentAt.IsZero() {
		breakdown.max("message_age", queue+"_max_s", max(time.Since(sentAt).Seconds(), 0))
	}
}

// Fetched records one outbound fetch: its time as crawl.fetch.duration, and in the breakdown its
// kind and class ("fetches": {"page_ok": 1}) and its body bytes, decoded, of every kind
// ("fetches": {"bytes": 20480}; a kind's key always has a class, so none is "bytes").
func Fetched(ctx context.Context, kind, class string, bytes int, d time.Duration) {
	if !Enabled() {
		return
	}
	meters().fetchDuration.Record(ctx, d.Seconds(), noAttrs)
	if class == "" {
		class = "ok"
	}
	breakdown.add("fetches", join(kind, class), 1)
	if bytes > 0 {
		breakdown.add("fetches", "bytes", float64(bytes))
	}
}

// Off turns metrics off (observe/telemetry's Stop, before it shuts its provider down).
func Off() { inst.Store(nil) }

// Breakdown is what the metrics leave out, by group and key ("pages": {"fetched": 9,
// "skipped_robots": 1, "terminal": 10}): counts, and for message_age the longest wait. TakeBreakdown returns it
// once a batch, for the ledger's line.
type Breakdown map[string]map[string]float64

// tally is the process's Breakdown since it was last taken. A Lambda function runs one
// invocation at a time, so it holds that invocation's; `crawl run` with metrics on mixes its
// batches' (each line then says what happened since the one before).
type tally struct {
	mu sync.Mutex
	b  Breakdown
}

var breakdown tally

func (t *tally) add(group, key string, v float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.entry(group)[key] += v
}

func (t *tally) max(group, key string, v float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	g := t.entry(group)
	g[key] = max(g[key], v)
}

// entry is the group's map, made on first use; t.mu is held.
func (t *tally) entry(group string) map[string]float64 {
	if t.b == nil {
		t.b = Breakdown{}
	}
	g := t.b[group]
	if g == nil {
		g = map[string]float64{}
		t.b[group] = g
	}
	return g
}

// TakeBreakdown returns the breakdown counted since it was last taken, and starts a new one. It is
// empty (nil) while metrics are off.
func TakeBreakdown() Breakdown {
	breakdown.mu.Lock()
	defer breakdown.mu.Unlock()
	b := breakdown.b
	breakdown.b = nil
	return b
}
