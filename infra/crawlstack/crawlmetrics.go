package crawlstack

import (
	"maps"
	"slices"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/jsii-runtime-go"
)

// MetricsNamespace is the CloudWatch namespace of the crawl's own metrics, which the functions
// write as Embedded Metric Format lines (CRAWL_METRICS_NAMESPACE, package telemetry). They have no
// dimension: each is one series, billed by the hour, and the stack reads at most eight (five
// today: testdata/metric-series.json, which the root module's metrics package holds against the
// code). Their breakdowns by class, reason and queue, and the counts that are no series (bytes
// fetched, admissions, requeues), are in the functions' log lines (docs/operating.md).
const MetricsNamespace = "Crawlstack"

// crawlMetric is one of the crawl's metrics in MetricsNamespace.
func crawlMetric(name, stat, label string) awscloudwatch.Metric {
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace: jsii.String(MetricsNamespace), MetricName: jsii.String(name),
		Statistic: jsii.String(stat), Period: awscdk.Duration_Minutes(jsii.Number(1)), Label: jsii.String(label),
	})
}

// sumOf is a metric-math sum of metrics, for one alarm over the three functions.
func sumOf(label string, ms []awscloudwatch.IMetric) awscloudwatch.MathExpression {
	using := map[string]awscloudwatch.IMetric{}
	expr := ""
	for i, m := range ms {
		id := string(rune('a' + i))
		using[id] = m
		if expr != "" {
			expr += "+"
		}
		expr += "FILL(" + id + ",0)"
	}
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String(expr), UsingMetrics: &using, Label: jsii.String(label),
		Period: awscdk.Duration_Minutes(jsii.Number(1)),
	})
}

// pipelineAlarms are the alarms beyond the queues': a crawl that reached its budget (only with a
// budget, cfg.BudgetUSD: none can be reached without), a crawl announced stalled (with the drain
// checks, cfg.FinishEvent), and with cfg.ExtraAlarms errors and throttles of the three functions
// (one alarm each, over their sum) and throttling on the table.
func pipelineAlarms(stack awscdk.Stack, cfg Config, table tableRef, fns map[string]fnResources) []awscloudwatch.Alarm {
	var alarms []awscloudwatch.Alarm
	if cfg.BudgetUSD > 0 {
		alarms = append(alarms, crawlMetric("crawl.budget.refusals", "Sum", "").CreateAlarm(stack, jsii.String("CrawlOverBudget"), &awscloudwatch.CreateAlarmOptions{
			AlarmDescription:   jsii.String("crawlstack: a crawl spent its budget (CRAWL_BUDGET_USD) and refuses new links"),
			Threshold:          jsii.Number(0),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
			EvaluationPeriods:  jsii.Number(1),
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		}))
	}
	if cfg.FinishEvent {
		alarms = append(alarms, stallAlarm(stack))
	}
	if cfg.ExtraAlarms {
		alarms = append(alarms, extraAlarms(stack, table, fns)...)
	}
	return alarms
}

// extraAlarms are the errors and throttles of the three functions (one alarm each, over their
// sum) and the table's throttling, each in 3 minutes of 5: 8 alarm metrics, $0.80 a month.
func extraAlarms(stack awscdk.Stack, table tableRef, fns map[string]fnResources) []awscloudwatch.Alarm {
	minute := awscdk.Duration_Minutes(jsii.Number(1))
	var errs, throttles []awscloudwatch.IMetric
	for _, name := range []string{FnSchedule, FnFetch, FnParse} {
		fn := fns[name].Function
		errs = append(errs, fn.MetricErrors(&awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String("Sum")}))
		throttles = append(throttles, fn.MetricThrottles(&awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String("Sum")}))
	}
	tableThrottles := []awscloudwatch.IMetric{
		table.Metric(jsii.String("ReadThrottleEvents"), &awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String("Sum")}),
		table.Metric(jsii.String("WriteThrottleEvents"), &awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String("Sum")}),
	}
	persistent := func(id, what string, m awscloudwatch.MathExpression) awscloudwatch.Alarm {
		// Three minutes of five: one failed invocation or one throttled burst is no alarm.
		return m.CreateAlarm(stack, jsii.String(id), &awscloudwatch.CreateAlarmOptions{
			AlarmDescription:   jsii.String("crawlstack: " + what),
			Threshold:          jsii.Number(0),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
			EvaluationPeriods:  jsii.Number(5),
			DatapointsToAlarm:  jsii.Number(3),
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		})
	}
	return []awscloudwatch.Alarm{
		persistent("FunctionErrors", "the functions fail invocations (errors, timeouts) in 3 of 5 minutes", sumOf("errors", errs)),
		persistent("FunctionThrottles", "the functions are throttled in 3 of 5 minutes", sumOf("throttles", throttles)),
		persistent("TableThrottles", "the table throttles reads or writes in 3 of 5 minutes", sumOf("table throttles", tableThrottles)),
	}
}

// stallAlarm fires when schedule's drain checks announce a crawl stalled (its "Crawl Stalled"
// event, and the metric crawl.stalls): its counters stood still with work left for
// finishStallMinutes, most likely a message in a dead-letter queue. Its checks have stopped; the
// event and `crawl status` say what is stuck (docs/operating.md).
func stallAlarm(stack awscdk.Stack) awscloudwatch.Alarm {
	stalls := crawlMetric("crawl.stalls", "Sum", "")
	return stalls.CreateAlarm(stack, jsii.String("CrawlStalled"), &awscloudwatch.CreateAlarmOptions{
		AlarmDescription:   jsii.String("crawlstack: a crawl stalled with work left (a Crawl Stalled event names it): see crawl status, crawl redrive, crawl resume"),
		Threshold:          jsii.Number(0),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
		EvaluationPeriods:  jsii.Number(1),
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
}

// crawlWidgets chart the crawl's own metrics on the dashboard: its series (no other), and from the
// functions' log groups (fns) what the ledger's invocation lines say that is no series (package
// metrics' breakdown): the terminal pages, the body bytes fetched, the URLs admitted, the requeues
// by reason and the metered cost, with CloudWatch Logs Insights queries, which cost what they scan
// when the dashboard is open ($0.005 a GB) rather than a series' $0.30 a month, billed by the hour
// for as long as crawls run. The age of each queue's messages is AWS/SQS's, charted above.
func crawlWidgets(fns map[string]fnResources) [][]awscloudwatch.IWidget {
	graph := func(title string, left ...awscloudwatch.IMetric) awscloudwatch.IWidget {
		return awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
			Title: jsii.String(title), Left: &left, Width: jsii.Number(8),
		})
	}
	var groups []*string
	for _, name := range slices.Sorted(maps.Keys(fns)) {
		groups = append(groups, fns[name].Logs.LogGroupName())
	}
	logQuery := func(title string, lines ...string) awscloudwatch.IWidget {
		return awscloudwatch.NewLogQueryWidget(&awscloudwatch.LogQueryWidgetProps{
			Title: jsii.String(title), LogGroupNames: &groups, QueryLines: jsii.Strings(lines...),
			View: awscloudwatch.LogQueryVisualizationType_LINE, Width: jsii.Number(8),
		})
	}
	return [][]awscloudwatch.IWidget{{
		logQuery("Pages per minute (terminal URLs)", pagesQuery...),
		graph("Fetch latency (s)",
			crawlMetric("crawl.fetch.duration", "p50", "p50"),
			crawlMetric("crawl.fetch.duration", "p90", "p90"),
			crawlMetric("crawl.fetch.duration", "p99", "p99")),
		logQuery("Bytes fetched per minute", bytesFetchedQuery...),
	}, {
		logQuery("Admissions and requeues per minute", admissionsQuery...),
		logQuery("Metered cost per minute (USD)", costQuery...),
		graph("Links refused over budget, crawls stalled",
			crawlMetric("crawl.budget.refusals", "Sum", "refused"),
			crawlMetric("crawl.stalls", "Sum", "stalled")),
	}}
}

// The dashboard's Logs Insights queries over the ledger's invocation lines (docs/operating.md has
// them too), one line a stage: CDK joins them with "\n|". On Lambda the line's message is the
// field "message" (aws-lambda-go's log handler renames slog's "msg"), not "msg".
var (
	// pagesQuery sums the URLs that reached a terminal state (fetched, skipped, failed, stopped:
	// pages.terminal), by minute.
	pagesQuery = []string{`filter message = "invocation"`, `stats sum(pages.terminal) as pages by bin(1m)`}
	// costQuery sums the invocations' metered cost at the default list prices (usd), by minute.
	costQuery = []string{`filter message = "invocation"`, `stats sum(usd) as usd by bin(1m)`}
	// bytesFetchedQuery sums the body bytes fetched (fetches.bytes), decoded, pages and
	// robots.txt files alike, by minute.
	bytesFetchedQuery = []string{`filter message = "invocation"`, `stats sum(fetches.bytes) as bytes by bin(1m)`}
	// admissionsQuery sums the URLs admitted and the fetch messages sent back to wait, by reason
	// (a politeness slot, a retry, a fresh invocation or a host's turn), by minute.
	admissionsQuery = []string{`filter message = "invocation"`,
		`stats sum(admission.admitted) as admitted, sum(requeues.slot) as requeued_slot, ` +
			`sum(requeues.retry) as requeued_retry, sum(requeues.wait) as requeued_wait by bin(1m)`}
)
