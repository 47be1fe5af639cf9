package crawlstack

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// alarmSeries lists the metrics an alarm reads, as "namespace metric dim=value,...", whether it
// is a plain alarm or a metric-math one, with the expression that combines them.
func alarmSeries(t *testing.T, id string) (series []string, expr string) {
	t.Helper()
	p := props(t, id)
	one := func(ns, name any, dims any) string {
		var ds []string
		list, _ := dims.([]any)
		for _, d := range list {
			m := d.(map[string]any)
			v, _ := json.Marshal(m["Value"])
			ds = append(ds, m["Name"].(string)+"="+string(v))
		}
		slices.Sort(ds)
		return ns.(string) + " " + name.(string) + " " + strings.Join(ds, ",")
	}
	if ms, ok := p["Metrics"].([]any); ok {
		for _, m := range ms {
			m := m.(map[string]any)
			if e, ok := m["Expression"].(string); ok {
				expr = e
				continue
			}
			stat := m["MetricStat"].(map[string]any)["Metric"].(map[string]any)
			series = append(series, one(stat["Namespace"], stat["MetricName"], stat["Dimensions"]))
		}
	} else {
		series = append(series, one(p["Namespace"], p["MetricName"], p["Dimensions"]))
	}
	slices.Sort(series)
	return series, expr
}

func quoted(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestPipelineAlarms: the alarms beyond the queues' read the three functions' errors and
// throttles, the table's throttle events and the crawls' budget refusals, and fire on 3 minutes
// of 5 (the budget on the first refusal).
func TestPipelineAlarms(t *testing.T) {
	fn := func(name string) string {
		return "FunctionName=" + quoted(ref(logicalID(t, "AWS::Lambda::Function", title(name)+"Function")))
	}
	table := "TableName=" + quoted(ref(logicalID(t, "AWS::DynamoDB::Table", "Table")))
	tests := []struct {
		alarm     string
		series    []string
		evaluate  float64
		datapoint float64
	}{
		{"FunctionErrors", []string{"AWS/Lambda Errors " + fn(FnFetch), "AWS/Lambda Errors " + fn(FnParse), "AWS/Lambda Errors " + fn(FnSchedule)}, 5, 3},
		{"FunctionThrottles", []string{"AWS/Lambda Throttles " + fn(FnFetch), "AWS/Lambda Throttles " + fn(FnParse), "AWS/Lambda Throttles " + fn(FnSchedule)}, 5, 3},
		{"TableThrottles", []string{"AWS/DynamoDB ReadThrottleEvents " + table, "AWS/DynamoDB WriteThrottleEvents " + table}, 5, 3},
		{"CrawlOverBudget", []string{`Crawlstack crawl.budget.refusals `}, 1, 0},
		{"CrawlStalled", []string{`Crawlstack crawl.stalls `}, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.alarm, func(t *testing.T) {
			id := logicalID(t, "AWS::CloudWatch::Alarm", tt.alarm)
			got, expr := alarmSeries(t, id)
			slices.Sort(tt.series)
			if !slices.Equal(got, tt.series) {
				t.Errorf("series\n%v\nwant\n%v", got, tt.series)
			}
			if len(tt.series) > 1 && strings.Count(expr, "FILL(") != len(tt.series) {
				t.Errorf("expression %q does not add all %d series", expr, len(tt.series))
			}
			p := props(t, id)
			if p["Threshold"] != float64(0) || p["ComparisonOperator"] != "GreaterThanThreshold" || p["EvaluationPeriods"] != tt.evaluate {
				t.Errorf("threshold %v %v over %v periods, want > 0 over %v", p["ComparisonOperator"], p["Threshold"], p["EvaluationPeriods"], tt.evaluate)
			}
			if dp, _ := p["DatapointsToAlarm"].(float64); dp != tt.datapoint {
				t.Errorf("DatapointsToAlarm %v, want %v", p["DatapointsToAlarm"], tt.datapoint)
			}
		})
	}
}

// TestTheFunctionsWriteTheNamespaceTheStackReads: the EMF namespace the functions get is the one
// the budget alarm and the dashboard read.
func TestTheFunctionsWriteTheNamespaceTheStackReads(t *testing.T) {
	for _, name := range []string{FnSchedule, FnFetch, FnParse} {
		env := props(t, logicalID(t, "AWS::Lambda::Function", title(name)+"Function"))["Environment"].(map[string]any)["Variables"].(map[string]any)
		if env["CRAWL_METRICS_NAMESPACE"] != MetricsNamespace {
			t.Errorf("%s: CRAWL_METRICS_NAMESPACE %v, want %s", name, env["CRAWL_METRICS_NAMESPACE"], MetricsNamespace)
		}
	}
	series, _ := alarmSeries(t, logicalID(t, "AWS::CloudWatch::Alarm", "CrawlOverBudget"))
	if len(series) != 1 || !strings.HasPrefix(series[0], MetricsNamespace+" ") {
		t.Errorf("budget alarm reads %v, want the %s namespace", series, MetricsNamespace)
	}
}

// cutSeries were metric series until issue 43: written in every invocation, they now are in the
// ledger's invocation lines only, and the dashboard queries those lines for them.
var cutSeries = []string{"crawl.fetch.bytes", "crawl.admissions", "crawl.requeues", `\"crawl.pages\"`, `\"crawl.cost\"`}

// dashboardWidgets decodes the dashboard's body, each reference to a resource written as
// REF(logicalId).
func dashboardWidgets(t *testing.T) []map[string]any {
	t.Helper()
	body := props(t, logicalID(t, "AWS::CloudWatch::Dashboard", "Dashboard"))["DashboardBody"]
	var b strings.Builder
	join := body.(map[string]any)["Fn::Join"].([]any)
	for _, part := range join[1].([]any) {
		switch p := part.(type) {
		case string:
			b.WriteString(p)
		case map[string]any:
			if id, ok := p["Ref"].(string); ok {
				b.WriteString("REF(" + id + ")")
			} else {
				b.WriteString("TOKEN")
			}
		}
	}
	var d struct{ Widgets []map[string]any }
	if err := json.Unmarshal([]byte(b.String()), &d); err != nil {
		t.Fatalf("dashboard body: %v: %s", err, b.String())
	}
	return d.Widgets
}

// TestDashboardShowsTheCrawlMetrics: the dashboard charts the crawl's own series, names none of
// those cut from them, and charts what they said (terminal pages, bytes fetched, admissions,
// requeues, metered cost) with Logs Insights queries of the ledger's invocation lines over the log group of every function that
// writes them (each one the template's functions log to).
func TestDashboardShowsTheCrawlMetrics(t *testing.T) {
	body, err := json.Marshal(props(t, logicalID(t, "AWS::CloudWatch::Dashboard", "Dashboard"))["DashboardBody"])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Pages per minute", "Fetch latency (s)", "Metered cost per minute (USD)", "Links refused over budget, crawls stalled",
		`\"crawl.fetch.duration\"`, `\"crawl.budget.refusals\"`, `\"crawl.stalls\"`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("dashboard has no %s", want)
		}
	}
	for _, cut := range cutSeries {
		if strings.Contains(string(body), cut) {
			t.Errorf("dashboard names %s, which is no metric series any more", cut)
		}
	}
	// The functions' log groups, as their LoggingConfig names them.
	var groups []string
	for id, r := range resources() {
		p, _ := r["Properties"].(map[string]any)
		env, _ := p["Environment"].(map[string]any)
		vars, _ := env["Variables"].(map[string]any)
		if r["Type"] != "AWS::Lambda::Function" || vars["CRAWL_TABLE"] == nil {
			continue
		}
		lc, _ := p["LoggingConfig"].(map[string]any)
		g, _ := lc["LogGroup"].(map[string]any)
		name, ok := g["Ref"].(string)
		if !ok {
			t.Fatalf("function %s logs to %v, not a log group of the stack", id, lc["LogGroup"])
		}
		groups = append(groups, name)
	}
	if want := crawlFunctionsIn(tmplJSON); len(groups) != want || want < 3 {
		t.Fatalf("%d crawl functions' log groups (%v), want %d", len(groups), groups, want)
	}
	queries := map[string]string{}
	for _, w := range dashboardWidgets(t) {
		p, _ := w["properties"].(map[string]any)
		if w["type"] != "log" {
			continue
		}
		title, _ := p["title"].(string)
		queries[title], _ = p["query"].(string)
		if p["view"] != "timeSeries" {
			t.Errorf("log widget %q: view %v, want timeSeries (a graph, as the series' were)", title, p["view"])
		}
	}
	for _, tt := range []struct {
		title string
		sums  []string // the fields of the invocation line the query sums (package metrics' breakdown)
	}{
		{"Pages per minute (terminal URLs)", []string{"sum(pages.terminal)"}},
		{"Metered cost per minute (USD)", []string{"sum(usd)"}},
		{"Bytes fetched per minute", []string{"sum(fetches.bytes)"}},
		{"Admissions and requeues per minute", []string{"sum(admission.admitted)", "sum(requeues.slot)", "sum(requeues.retry)", "sum(requeues.wait)"}},
	} {
		q, ok := queries[tt.title]
		if !ok {
			t.Errorf("no Logs Insights widget %q (log widgets: %v)", tt.title, queries)
			continue
		}
		for _, g := range groups {
			if !strings.Contains(q, "SOURCE 'REF("+g+")'") {
				t.Errorf("%q does not query log group %s: %s", tt.title, g, q)
			}
		}
		if strings.Count(q, "SOURCE ") != len(groups) {
			t.Errorf("%q queries %d log groups, want the %d functions': %s", tt.title, strings.Count(q, "SOURCE "), len(groups), q)
		}
		for _, want := range append([]string{`filter message = "invocation"`, "by bin(1m)"}, tt.sums...) {
			if !strings.Contains(q, want) {
				t.Errorf("%q has no %s: %s", tt.title, want, q)
			}
		}
	}
}

// TestMetricsOff: metrics=false turns the functions' metrics off; by default they are on.
func TestMetricsOff(t *testing.T) {
	_, off := synthWith(t, map[string]any{"metrics": "false"})
	for _, tt := range []struct {
		name     string
		template map[string]any
		want     any
	}{{"default", tmplJSON, nil}, {"metrics=false", off, "none"}} {
		n := 0
		for id, r := range resourcesOf(tt.template) {
			p, _ := r["Properties"].(map[string]any)
			env, _ := p["Environment"].(map[string]any)
			vars, _ := env["Variables"].(map[string]any)
			if r["Type"] != "AWS::Lambda::Function" || vars["CRAWL_TABLE"] == nil {
				continue
			}
			n++
			if got := vars["OTEL_METRICS_EXPORTER"]; got != tt.want {
				t.Errorf("%s: %s OTEL_METRICS_EXPORTER %v, want %v", tt.name, id, got, tt.want)
			}
		}
		if want := crawlFunctionsIn(tt.template); n != want {
			t.Errorf("%s: %d crawl functions, want %d", tt.name, n, want)
		}
	}
}
