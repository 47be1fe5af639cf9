package crawlstack

import (
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/jsii-runtime-go"
)

// MetricsNamespace is the CloudWatch namespace of the crawl's own metrics, which the functions
// write as Embedded Metric Format lines (CRAWL_METRICS_NAMESPACE, package telemetry). Their
// dimensions are "function" (schedule, fetch, parse) and the metric's attributes.
const MetricsNamespace = "Crawlstack"

// crawlMetric is one of the crawl's metrics in MetricsNamespace.
func crawlMetric(name, stat, label string, dims map[string]string) awscloudwatch.Metric {
	dm := map[string]*string{}
	for k, v := range dims {
		dm[k] = jsii.String(v)
	}
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace: jsii.String(MetricsNamespace), MetricName: jsii.String(name), DimensionsMap: &dm,
		Statistic: jsii.String(stat), Period: awscdk.Duration_Minutes(jsii.Number(1)), Label: jsii.String(label),
	})
}

// crawlSearch charts every series of a metric whatever its attribute values (an error class, a
// requeue reason), through a CloudWatch search expression over its dimension set.
func crawlSearch(name string, dims []string, label string) awscloudwatch.IMetric {
	schema := "{" + MetricsNamespace
	for _, d := range dims {
		schema += "," + d
	}
	schema += "}"
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String("SEARCH('" + schema + ` MetricName="` + name + `"', 'Sum', 60)`),
		Label:      jsii.String(label), Period: awscdk.Duration_Minutes(jsii.Number(1)),
	})
}

// costUnitNames are the billed units the functions count, each as the metric crawl.cost.<name>
// (telemetry.CostUnitNames in the root module, which this module does not import).
var costUnitNames = []string{"sqs_requests", "ddb_read_units", "ddb_write_units", "s3_class_a", "s3_class_b",
	"lambda_requests", "lambda_gb_seconds", "log_bytes"}

// costUnits charts every function's billed units, one series per function and unit.
func costUnits() awscloudwatch.IMetric {
	var names []string
	for _, u := range costUnitNames {
		names = append(names, `MetricName="crawl.cost.`+u+`"`)
	}
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String("SEARCH('{" + MetricsNamespace + ",function} (" + strings.Join(names, " OR ") + ")', 'Sum', 60)"),
		Label:      jsii.String(""), Period: awscdk.Duration_Minutes(jsii.Number(1)),
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

// pipelineAlarms are the alarms beyond the queues': errors and throttles of the three functions
// (one alarm each, over their sum, so that the stack keeps close to the 10 alarms an account has
// free), throttling on the table, a crawl that reached its budget, and (with the drain checks,
// cfg.FinishEvent) a crawl announced stalled.
func pipelineAlarms(stack awscdk.Stack, cfg Config, table tableRef, fns map[string]fnResources) []awscloudwatch.Alarm {
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
	budget := crawlMetric("crawl.refusals", "Sum", "", map[string]string{"function": FnSchedule, "class": "budget"})
	alarms := []awscloudwatch.Alarm{
		persistent("FunctionErrors", "the functions fail invocations (errors, timeouts) in 3 of 5 minutes", sumOf("errors", errs)),
		persistent("FunctionThrottles", "the functions are throttled in 3 of 5 minutes", sumOf("throttles", throttles)),
		persistent("TableThrottles", "the table throttles reads or writes in 3 of 5 minutes", sumOf("table throttles", tableThrottles)),
		budget.CreateAlarm(stack, jsii.String("CrawlOverBudget"), &awscloudwatch.CreateAlarmOptions{
			AlarmDescription:   jsii.String("crawlstack: a crawl spent its budget (CRAWL_BUDGET_USD) and refuses new links"),
			Threshold:          jsii.Number(0),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
			EvaluationPeriods:  jsii.Number(1),
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		}),
	}
	if cfg.FinishEvent {
		alarms = append(alarms, stallAlarm(stack))
	}
	return alarms
}

// stallAlarm fires when schedule's drain checks announce a crawl stalled (its "Crawl Stalled"
// event, and the metric crawl.stalls): its counters stood still with work left for
// finishStallMinutes, most likely a message in a dead-letter queue. Its checks have stopped; the
// event and `crawl status` say what is stuck (docs/operating.md).
func stallAlarm(stack awscdk.Stack) awscloudwatch.Alarm {
	stalls := crawlMetric("crawl.stalls", "Sum", "", map[string]string{"function": FnSchedule})
	return stalls.CreateAlarm(stack, jsii.String("CrawlStalled"), &awscloudwatch.CreateAlarmOptions{
		AlarmDescription:   jsii.String("crawlstack: a crawl stalled with work left (a Crawl Stalled event names it): see crawl status, crawl redrive, crawl resume"),
		Threshold:          jsii.Number(0),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
		EvaluationPeriods:  jsii.Number(1),
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
}

// crawlWidgets chart the crawl's own metrics on the dashboard.
func crawlWidgets(queues map[string]pipelineQueue) [][]awscloudwatch.IWidget {
	graph := func(title string, left ...awscloudwatch.IMetric) awscloudwatch.IWidget {
		return awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
			Title: jsii.String(title), Left: &left, Width: jsii.Number(8),
		})
	}
	fetch := map[string]string{"function": FnFetch}
	var ages []awscloudwatch.IMetric
	for _, name := range []string{FnSchedule, FnFetch, FnParse} {
		ages = append(ages, crawlMetric("crawl.message.age", "p90", name+" p90",
			map[string]string{"function": name, "queue": *queues[name].Queue.QueueName()}))
	}
	return [][]awscloudwatch.IWidget{{
		graph("Pages per minute",
			crawlMetric("crawl.pages", "Sum", "fetched", map[string]string{"function": FnFetch, "outcome": "fetched"}),
			crawlSearch("crawl.pages", []string{"class", "function", "outcome"}, "")),
		graph("Fetch latency (s)",
			crawlMetric("crawl.fetch.duration", "p50", "p50", fetch),
			crawlMetric("crawl.fetch.duration", "p90", "p90", fetch),
			crawlMetric("crawl.fetch.duration", "p99", "p99", fetch)),
		graph("Bytes fetched per minute", crawlMetric("crawl.fetch.bytes", "Sum", "bytes", fetch)),
	}, {
		graph("Admissions and dedup hits",
			crawlMetric("crawl.admissions", "Sum", "admitted", map[string]string{"function": FnSchedule}),
			crawlSearch("crawl.dedup.hits", []string{"function", "layer"}, "")),
		graph("Politeness waits and requeues",
			crawlMetric("crawl.politeness.waits", "Sum", "waits in place", fetch),
			crawlSearch("crawl.requeues", []string{"function", "reason"}, "")),
		graph("Message age at receive (s)", ages...),
	}, {
		graph("Billed units per minute", costUnits()),
		graph("Links refused (budget, stop)", crawlSearch("crawl.refusals", []string{"class", "function"}, "")),
	}}
}
