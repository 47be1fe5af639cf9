package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

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
	h := telemetry.Invocation(tel, "schedule", func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		metrics.Admitted(ctx, n)
		metrics.Requeued(ctx, "slot")
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
			Function   *string   `json:"function"`
			Admissions float64   `json:"crawl.admissions"`
			Requeues   float64   `json:"crawl.requeues"`
			Durations  []float64 `json:"crawl.fetch.duration"`
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != 1 {
			t.Fatalf("invocation %d wrote %d lines, want 1 (one attribute set):\n%s", n, len(lines), out.String())
		}
		if err := json.Unmarshal([]byte(lines[0]), &line); err != nil {
			t.Fatalf("%v: %s", err, lines[0])
		}
		// 1.5 s falls in the bucket (1, 2.5]: its midpoint.
		if line.Admissions != float64(n) || line.Requeues != 1 || len(line.Durations) != 1 || line.Durations[0] != 1.75 || line.Function != nil {
			t.Errorf("line %s: want %d admissions, 1 requeue, one fetch of the bucket of 1.5 s, no function", lines[0], n)
		}
		m := line.Aws.CloudWatchMetrics
		if len(m) != 1 || m[0].Namespace != "Test" || len(m[0].Dimensions) != 1 || len(m[0].Dimensions[0]) != 0 {
			t.Errorf("metadata %+v, want namespace Test and one empty dimension set", m)
		}
		units := map[string]string{}
		for _, x := range m[0].Metrics {
			units[x.Name] = x.Unit
		}
		if units["crawl.admissions"] != "Count" || units["crawl.fetch.duration"] != "Seconds" {
			t.Errorf("units %v", units)
		}
	}
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

// TestEMFLinesHaveNoDimensions: pages of every outcome and class, refusals and billed units all
// go to one line with no dimension, so that a stack pays for a handful of series; a link refused
// for the budget is a refusal, not a page, and the units are priced in dollars.
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
	metrics.CostUnits(ctx, cost.Units{SQSRequests: 3, DynamoDBWriteUnits: 1.5})
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
	// By hand: 3 SQS requests at $0.40 a million and 1.5 write units at $0.625 a million.
	usd := 3*0.40/1e6 + 1.5*0.625/1e6
	want := map[string]float64{"crawl.pages": 3, "crawl.budget.refusals": 2, "crawl.cost": usd}
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
		b["refusals"]["budget"] != 2 || b["refusals"]["stopped"] != 5 {
		t.Errorf("breakdown %v, want the pages by outcome and class and the refusals by class", b)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
