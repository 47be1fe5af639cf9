package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/observe/ledger"
	"github.com/crawlstack/crawlstack/shared/observe/metrics"

	"github.com/crawlstack/crawlstack/shared/crawl/cost"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/observe/telemetry"
)

// TestAnInvocationWritesItsEMFLinesAtItsEnd: with EMF on, each invocation's metrics are on the
// writer when the invocation returns, as delta counts, and an invocation that counted nothing
// writes nothing.
func TestAnInvocationWritesItsEMFLinesAtItsEnd(t *testing.T) {
	var out bytes.Buffer
	tel, err := telemetry.Setup(context.Background(), func(k string) string {
		return map[string]string{telemetry.EnvNamespace: "Test"}[k]
	}, telemetry.Options{EMF: &out})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	n := 0
	h := telemetry.Invocation(tel, "fetch", func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		metrics.CountStates(ctx, map[string]int64{"class_budget": int64(n)}) // links refused over budget
		metrics.Fetched(ctx, "page", "", 100, 1500*time.Millisecond)
		return events.SQSEventResponse{}, nil
	})
	for _, n = range []int{3, 4} {
		out.Reset()
		if _, err := h(context.Background(), events.SQSEvent{}); err != nil {
			t.Fatal(err)
		}
		var line struct {
			Aws struct {
				CloudWatchMetrics []struct {
					Namespace  string
					Dimensions [][]string
					Metrics    []struct{ Name, Unit string }
				}
			} `json:"_aws"`
			Function  *string   `json:"function"`
			Refused   float64   `json:"crawl.budget.refusals"`
			Durations []float64 `json:"crawl.fetch.duration"`
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != 1 {
			t.Fatalf("invocation %d wrote %d lines, want 1 (one attribute set):\n%s", n, len(lines), out.String())
		}
		if err := json.Unmarshal([]byte(lines[0]), &line); err != nil {
			t.Fatalf("%v: %s", err, lines[0])
		}
		// 1.5 s falls in the bucket (1, 2.5]: its midpoint.
		if line.Refused != float64(n) || len(line.Durations) != 1 || line.Durations[0] != 1.75 || line.Function != nil {
			t.Errorf("line %s: want %d refusals, one fetch of the bucket of 1.5 s, no function", lines[0], n)
		}
		m := line.Aws.CloudWatchMetrics
		if len(m) != 1 || m[0].Namespace != "Test" || len(m[0].Dimensions) != 1 || len(m[0].Dimensions[0]) != 0 {
			t.Errorf("metadata %+v, want namespace Test and one empty dimension set", m)
		}
		units := map[string]string{}
		for _, x := range m[0].Metrics {
			units[x.Name] = x.Unit
		}
		if units["crawl.budget.refusals"] != "Count" || units["crawl.fetch.duration"] != "Seconds" {
			t.Errorf("units %v", units)
		}
	}
	metrics.TakeBreakdown() // what this test counted, for no ledger
	out.Reset()
	n = 0
	quiet := telemetry.Invocation(tel, "schedule", func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		return events.SQSEventResponse{}, nil
	})
	if _, err := quiet(context.Background(), events.SQSEvent{}); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 {
		t.Errorf("an invocation that counted nothing wrote %q", out.String())
	}
}

// books is a crawl's ledger that keeps nothing.
type books struct{}

func (books) AddCost(context.Context, string, cost.Units) error { return nil }
func (books) Flush(context.Context) error                       { return nil }

// TestAnInvocationsBreakdownHasWhatEMFNoLongerWrites: an invocation wrapped as the functions wrap
// theirs (telemetry around the ledger, both writing to one stdout) admits, requeues, fetches and
// ends pages. Its EMF lines, decoded as CloudWatch reads them, name only series of metrics.Series
// and none of the five cut from them (crawl.admissions, crawl.requeues, crawl.fetch.bytes,
// crawl.pages, crawl.cost: issue 43); the ledger's invocation line carries what those said: the
// URLs admitted, the requeues by reason, the body bytes fetched, the terminal pages
// (pages.terminal) and the invocation's metered cost (usd), which the dashboard charts.
func TestAnInvocationsBreakdownHasWhatEMFNoLongerWrites(t *testing.T) {
	var stdout bytes.Buffer
	tel, err := telemetry.Setup(context.Background(), func(string) string { return "" }, telemetry.Options{EMF: &stdout})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	metrics.TakeBreakdown() // start from nothing
	l := &ledger.Ledger{State: books{}, MemoryMB: 512, Log: slog.New(slog.NewJSONHandler(&stdout, nil))}
	h := telemetry.Invocation(tel, "fetch", l.Wrap(func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		metrics.Admitted(ctx, 7)
		metrics.Requeued(ctx, "slot")
		metrics.Requeued(ctx, "retry")
		metrics.Requeued(ctx, "slot")
		metrics.Fetched(ctx, "robots", "", 30, 100*time.Millisecond)
		metrics.Fetched(ctx, "page", "", 20480, 300*time.Millisecond)
		metrics.Fetched(ctx, "page", "http_4xx", 19, 200*time.Millisecond)
		metrics.CountStates(ctx, map[string]int64{"fetched": 1})
		metrics.CountStates(ctx, map[string]int64{"failed": 1, "class_http_4xx": 1})
		return events.SQSEventResponse{}, nil
	}))
	if _, err := h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: "1", Body: `{"crawl":"a"}`}}}); err != nil {
		t.Fatal(err)
	}
	cut := []string{"crawl.admissions", "crawl.requeues", "crawl.fetch.bytes", "crawl.pages", "crawl.cost"}
	var named []string
	var invocation map[string]any
	for _, l := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var doc map[string]any
		if err := json.Unmarshal([]byte(l), &doc); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		if doc["msg"] == "invocation" {
			invocation = doc
			continue
		}
		aws, ok := doc["_aws"].(map[string]any)
		if !ok {
			t.Fatalf("a line neither EMF nor the invocation's: %s", l)
		}
		for _, cw := range aws["CloudWatchMetrics"].([]any) {
			for _, m := range cw.(map[string]any)["Metrics"].([]any) {
				named = append(named, m.(map[string]any)["Name"].(string))
			}
		}
		for _, c := range cut {
			if _, ok := doc[c]; ok {
				t.Errorf("an EMF line has a field %s: %s", c, l)
			}
		}
	}
	slices.Sort(named)
	// The fetches' times, and nothing else.
	if want := []string{"crawl.fetch.duration"}; !slices.Equal(named, want) {
		t.Errorf("the EMF lines name %v, want %v", named, want)
	}
	for _, name := range named {
		if !slices.Contains(metrics.Series, name) {
			t.Errorf("the EMF lines name %s, not one of metrics.Series %v", name, metrics.Series)
		}
	}
	for _, c := range cut {
		if slices.Contains(metrics.Series, c) {
			t.Errorf("metrics.Series still lists %s", c)
		}
	}
	if invocation == nil {
		t.Fatalf("no invocation line in:\n%s", stdout.String())
	}
	group := func(name string) map[string]any {
		g, _ := invocation[name].(map[string]any)
		return g
	}
	for _, c := range []struct {
		group, key string
		want       float64
	}{
		{"admission", "admitted", 7},
		{"requeues", "slot", 2}, {"requeues", "retry", 1},
		{"fetches", "bytes", 30 + 20480 + 19},
		{"fetches", "page_ok", 1}, {"fetches", "page_http_4xx", 1}, {"fetches", "robots_ok", 1},
		{"pages", "fetched", 1}, {"pages", "failed_http_4xx", 1}, {"pages", "terminal", 2},
	} {
		if got, _ := group(c.group)[c.key].(float64); got != c.want {
			t.Errorf("invocation line %s.%s = %v, want %v (line: %v)", c.group, c.key, group(c.group)[c.key], c.want, invocation)
		}
	}
	// The cost per minute on the dashboard sums this: 512 MB for the invocation's time, at least.
	if usd, _ := invocation["usd"].(float64); usd <= 0 {
		t.Errorf("invocation line usd = %v, want the invocation's metered cost (line: %v)", invocation["usd"], invocation)
	}
}

// TestEMFLinesHaveNoDimensions: pages of every outcome and class and refusals go to one line with
// no dimension, so that a stack pays for a handful of series: a link refused for the budget is a
// refusal there, and the pages are in the breakdown alone, by outcome and class and in all.
func TestEMFLinesHaveNoDimensions(t *testing.T) {
	var out bytes.Buffer
	tel, err := telemetry.Setup(context.Background(), func(string) string { return "" }, telemetry.Options{EMF: &out})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	ctx := context.Background()
	metrics.CountStates(ctx, map[string]int64{"seen": 1, "fetched": 1})
	metrics.CountStates(ctx, map[string]int64{"skipped": 1, "class_robots": 1})
	metrics.CountStates(ctx, map[string]int64{"failed": 1, "class_http_4xx": 1})
	metrics.CountStates(ctx, map[string]int64{"class_budget": 2})
	metrics.CountStates(ctx, map[string]int64{"class_stopped": 5}) // in the breakdown only
	metrics.CountStates(ctx, map[string]int64{"fetched": -1})      // a correction is no page
	if err := tel.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d lines, want 1:\n%s", len(lines), out.String())
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &doc); err != nil {
		t.Fatal(err)
	}
	aws := doc["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)
	if dims := string(must(json.Marshal(aws["Dimensions"]))); dims != "[[]]" {
		t.Errorf("dimensions %s, want [[]]", dims)
	}
	want := map[string]float64{"crawl.budget.refusals": 2}
	got := map[string]float64{}
	for _, m := range aws["Metrics"].([]any) {
		name := m.(map[string]any)["Name"].(string)
		got[name], _ = doc[name].(float64)
	}
	if len(got) != len(want) {
		t.Errorf("metrics %v, want %v", got, want)
	}
	for k, v := range want {
		if d := got[k] - v; d > 1e-12 || d < -1e-12 {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	b := metrics.TakeBreakdown()
	if b["pages"]["fetched"] != 1 || b["pages"]["skipped_robots"] != 1 || b["pages"]["failed_http_4xx"] != 1 ||
		b["pages"]["terminal"] != 3 || b["refusals"]["budget"] != 2 || b["refusals"]["stopped"] != 5 {
		t.Errorf("breakdown %v, want the pages by outcome and class and the refusals by class", b)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
