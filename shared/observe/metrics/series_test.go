package metrics_test

import (
	"bytes"
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/observe/metrics"
	"github.com/crawlstack/crawlstack/shared/observe/telemetry"
)

// maxSeries is the most custom metric series a stack may pay for (issue 43): CloudWatch bills
// each name and set of dimension values by the hour.
const maxSeries = 8

// record calls each helper that records a metric, with many values of every argument that could
// become a dimension (classes, reasons, layers, queues, kinds), as crawls of every kind would.
var record = map[string]func(ctx context.Context){
	"CountStates": func(ctx context.Context) {
		for _, outcome := range []string{"fetched", "skipped", "failed", "stopped"} {
			for _, class := range classes {
				metrics.CountStates(ctx, map[string]int64{outcome: 1, "class_" + class: 1, "seen": 1})
			}
		}
		metrics.CountStates(ctx, map[string]int64{"class_budget": 3})
		metrics.CountStates(ctx, map[string]int64{"class_stopped": 2})
	},
	"Stalled":  func(ctx context.Context) { metrics.Stalled(ctx) },
	"Admitted": func(ctx context.Context) { metrics.Admitted(ctx, 7) },
	"DedupHits": func(ctx context.Context) {
		for _, l := range []string{"memory", "table", "other"} {
			metrics.DedupHits(ctx, l, 2)
		}
	},
	"PolitenessWait": func(ctx context.Context) { metrics.PolitenessWait(ctx, time.Second) },
	"Requeued": func(ctx context.Context) {
		for _, r := range []string{"slot", "retry", "wait", "other"} {
			metrics.Requeued(ctx, r)
		}
	},
	"MessageAge": func(ctx context.Context) {
		for _, q := range []string{"crawlstack-schedule", "crawlstack-fetch", "crawlstack-parse", "other-stack-fetch"} {
			metrics.MessageAge(ctx, q, time.Now().Add(-time.Second))
		}
	},
	"Fetched": func(ctx context.Context) {
		for _, kind := range []string{"page", "robots"} {
			for _, class := range append(classes, "") {
				metrics.Fetched(ctx, kind, class, 1000, 300*time.Millisecond)
			}
		}
	},
}

var classes = []string{"robots", "scope", "type", "size", "budget", "http_4xx", "http_5xx", "timeout", "dns", "connect", "tls"}

// The helpers that record nothing: switches and the breakdown's reader.
var notRecording = []string{"Enabled", "UseMeter", "Off", "TakeBreakdown"}

// TestEveryHelperIsCounted: the series count below calls every exported function of the package
// that records a metric, so that a new helper with a dimension cannot slip past it.
func TestEveryHelperIsCounted(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "metrics.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv != nil || !fn.Name.IsExported() {
			continue
		}
		if _, ok := record[fn.Name.Name]; !ok && !slices.Contains(notRecording, fn.Name.Name) {
			t.Errorf("metrics.%s is not called by the series count (record)", fn.Name.Name)
		}
	}
}

// TestAtMostEightSeries calls every helper with every value that could become a dimension, writes
// the metrics as EMF lines, as the functions do, and counts the series they make: each metric name
// with each set of dimension values. It fails above maxSeries, and when the series are not
// metrics.Series, or not the list the stack's tests read (infra/crawlstack/testdata/metric-series.json).
func TestAtMostEightSeries(t *testing.T) {
	series := seriesOf(t, func(ctx context.Context) {
		for _, rec := range record {
			rec(ctx)
		}
	})
	if len(series) > maxSeries {
		t.Errorf("%d metric series, want at most %d: %v", len(series), maxSeries, slices.Sorted(func(yield func(string) bool) {
			for s := range series {
				if !yield(s) {
					return
				}
			}
		}))
	}
	var want []string
	for _, name := range metrics.Series {
		want = append(want, name+"{}")
	}
	var got []string
	for s := range series {
		got = append(got, s)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("series written\n%v\nwant metrics.Series\n%v", got, want)
	}
	b, err := os.ReadFile("../../../infra/crawlstack/testdata/metric-series.json")
	if err != nil {
		t.Fatal(err)
	}
	var stack []string
	if err := json.Unmarshal(b, &stack); err != nil {
		t.Fatal(err)
	}
	slices.Sort(stack)
	names := slices.Sorted(slices.Values(metrics.Series))
	if !slices.Equal(stack, names) {
		t.Errorf("infra/crawlstack/testdata/metric-series.json holds %v, the code writes %v: change them together", stack, names)
	}
}

// TestARunningCrawlWritesOnlyTheSteadySeries calls the helpers as a crawl that runs well calls
// them (pages of every outcome and class, fetches, admissions, waits and requeues, message ages;
// no link refused over budget, no stall), and finds only metrics.Steady written: the series a
// budget counts for a crawl's time (crawlstate.WithMetricSeries), and what a crawl's metric-hours
// cost (docs/cost.md).
func TestARunningCrawlWritesOnlyTheSteadySeries(t *testing.T) {
	series := seriesOf(t, func(ctx context.Context) {
		for name, rec := range record {
			if name != "Stalled" && name != "CountStates" { // CountStates's record refuses links over budget
				rec(ctx)
			}
		}
		for _, outcome := range []string{"fetched", "skipped", "failed", "stopped"} {
			for _, class := range classes {
				metrics.CountStates(ctx, map[string]int64{outcome: 1, "class_" + class: 1, "seen": 1})
			}
		}
		metrics.CountStates(ctx, map[string]int64{"robots_refused": 4})
	})
	var got []string
	for s := range series {
		got = append(got, strings.TrimSuffix(s, "{}"))
	}
	slices.Sort(got)
	if want := slices.Sorted(slices.Values(metrics.Steady)); !slices.Equal(got, want) {
		t.Errorf("a running crawl writes the series %v, want metrics.Steady %v", got, want)
	}
	for _, s := range metrics.Steady {
		if !slices.Contains(metrics.Series, s) {
			t.Errorf("metrics.Steady names %s, which is not one of metrics.Series %v", s, metrics.Series)
		}
	}
}

// seriesOf runs calls with metrics going out as EMF lines, as the functions write them, and
// returns the series the lines make: each metric name with its set of dimension values
// ("crawl.fetch.duration{}").
func seriesOf(t *testing.T, calls func(ctx context.Context)) map[string]bool {
	t.Helper()
	var out bytes.Buffer
	tel, err := telemetry.Setup(context.Background(), func(string) string { return "" }, telemetry.Options{EMF: &out})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	ctx := context.Background()
	calls(ctx)
	if err := tel.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	series := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if l == "" {
			continue
		}
		var doc map[string]any
		if err := json.Unmarshal([]byte(l), &doc); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		for _, cw := range doc["_aws"].(map[string]any)["CloudWatchMetrics"].([]any) {
			cw := cw.(map[string]any)
			for _, set := range cw["Dimensions"].([]any) {
				var dims []string
				for _, d := range set.([]any) {
					dims = append(dims, d.(string)+"="+doc[d.(string)].(string))
				}
				slices.Sort(dims)
				for _, m := range cw["Metrics"].([]any) {
					series[m.(map[string]any)["Name"].(string)+"{"+strings.Join(dims, ",")+"}"] = true
				}
			}
		}
	}
	return series
}
