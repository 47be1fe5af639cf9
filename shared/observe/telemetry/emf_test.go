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
	}, telemetry.Options{EMF: &out, Function: "schedule"})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	n := 0
	h := telemetry.Invocation(tel, "schedule", func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		metrics.Admitted(ctx, n)
		metrics.PolitenessWait(ctx, 1500*time.Millisecond)
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
			Function   string  `json:"function"`
			Admissions float64 `json:"crawl.admissions"`
			Waits      float64 `json:"crawl.politeness.waits"`
			WaitTime   float64 `json:"crawl.politeness.wait_time"`
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != 1 {
			t.Fatalf("invocation %d wrote %d lines, want 1 (one attribute set):\n%s", n, len(lines), out.String())
		}
		if err := json.Unmarshal([]byte(lines[0]), &line); err != nil {
			t.Fatalf("%v: %s", err, lines[0])
		}
		if line.Admissions != float64(n) || line.Waits != 1 || line.WaitTime != 1.5 || line.Function != "schedule" {
			t.Errorf("line %s: want %d admissions, 1 wait of 1.5 s, function schedule", lines[0], n)
		}
		m := line.Aws.CloudWatchMetrics
		if len(m) != 1 || m[0].Namespace != "Test" || len(m[0].Dimensions) != 1 || strings.Join(m[0].Dimensions[0], ",") != "function" {
			t.Errorf("metadata %+v, want namespace Test and the function dimension", m)
		}
		units := map[string]string{}
		for _, x := range m[0].Metrics {
			units[x.Name] = x.Unit
		}
		if units["crawl.admissions"] != "Count" || units["crawl.politeness.wait_time"] != "Seconds" {
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

// TestEMFDimensions: a page fetched has no class, so its line has no class dimension (CloudWatch
// takes no empty value); a link refused for the budget is a refusal, not a page.
func TestEMFDimensions(t *testing.T) {
	var out bytes.Buffer
	tel, err := telemetry.Setup(context.Background(), func(string) string { return "" }, telemetry.Options{EMF: &out, Function: "fetch"})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	ctx := context.Background()
	metrics.CountStates(ctx, map[string]int64{"seen": 1, "fetched": 1})
	metrics.CountStates(ctx, map[string]int64{"class_budget": 2})
	metrics.CountStates(ctx, map[string]int64{"fetched": -1}) // a correction is no page
	metrics.CostUnits(ctx, cost.Units{SQSRequests: 3, DynamoDBWriteUnits: 1.5})
	if err := tel.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var doc map[string]any
		if err := json.Unmarshal([]byte(l), &doc); err != nil {
			t.Fatal(err)
		}
		aws := doc["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)
		dims, _ := json.Marshal(aws["Dimensions"])
		for _, m := range aws["Metrics"].([]any) {
			name := m.(map[string]any)["Name"].(string)
			got[name] = string(dims) + "=" + strings.TrimSpace(string(must(json.Marshal(doc[name]))))
		}
		if v, ok := doc["class"]; ok && v == "" {
			t.Errorf("an empty class field: %s", l)
		}
	}
	want := map[string]string{
		"crawl.pages":    `[["function","outcome"]]=1`,
		"crawl.refusals": `[["class","function"]]=2`,
		// The billed units share the function's line, one metric each; a zero is left out.
		"crawl.cost.sqs_requests":    `[["function"]]=3`,
		"crawl.cost.ddb_write_units": `[["function"]]=1.5`,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("metrics %v, want only %v", got, want)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
