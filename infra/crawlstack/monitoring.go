package crawlstack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/jsii-runtime-go"
)

// newMonitoring adds the alarms and the dashboard. Alarms have no actions:
// wire them to an SNS topic or a chat integration in the account.
func newMonitoring(stack awscdk.Stack, cfg Config, queues map[string]pipelineQueue, fns map[string]fnResources) awscloudwatch.Dashboard {
	minute := awscdk.Duration_Minutes(jsii.Number(1))
	dash := awscloudwatch.NewDashboard(stack, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		// Named after the stack so users find it; dashboard names are per account.
		DashboardName:   jsii.String(*stack.StackName() + "-" + *stack.Region()),
		DefaultInterval: awscdk.Duration_Hours(jsii.Number(3)),
	})
	var depth, inFlight, age, dlqDepth, invocations, errs, duration, throttles, concurrency []awscloudwatch.IMetric
	for _, name := range []string{FnSchedule, FnFetch, FnParse} {
		id := title(name)
		q, fn := queues[name], fns[name].Function
		label := func(s string) *awscloudwatch.MetricOptions {
			return &awscloudwatch.MetricOptions{Label: jsii.String(name + " " + s), Period: minute}
		}

		// Alarm metrics carry no label: a labelled metric renders as a
		// metric-math alarm, which is harder to read in the console.
		dlqVisible := q.DLQ.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
			Period: minute, Statistic: jsii.String("Maximum"),
		})
		dlqVisible.CreateAlarm(stack, jsii.String(id+"DLQNotEmpty"), &awscloudwatch.CreateAlarmOptions{
			AlarmDescription:   jsii.String("crawlstack: messages in the " + name + " dead-letter queue"),
			Threshold:          jsii.Number(0),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
			EvaluationPeriods:  jsii.Number(1),
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		})
		oldest := q.Queue.MetricApproximateAgeOfOldestMessage(&awscloudwatch.MetricOptions{
			Period: minute, Statistic: jsii.String("Maximum"),
		})
		oldest.CreateAlarm(stack, jsii.String(id+"QueueStale"), &awscloudwatch.CreateAlarmOptions{
			AlarmDescription:   jsii.String("crawlstack: the " + name + " queue is not being drained"),
			Threshold:          jsii.Number(float64(cfg.OldestMessageAlarmSeconds)),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
			EvaluationPeriods:  jsii.Number(5),
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		})

		depth = append(depth, q.Queue.MetricApproximateNumberOfMessagesVisible(label("visible")))
		inFlight = append(inFlight, q.Queue.MetricApproximateNumberOfMessagesNotVisible(label("in flight")))
		age = append(age, oldest.With(&awscloudwatch.MetricOptions{Label: jsii.String(name)}))
		dlqDepth = append(dlqDepth, dlqVisible.With(&awscloudwatch.MetricOptions{Label: jsii.String(name + " DLQ")}))
		invocations = append(invocations, fn.MetricInvocations(label("invocations")))
		errs = append(errs, fn.MetricErrors(label("errors")))
		duration = append(duration, fn.MetricDuration(&awscloudwatch.MetricOptions{
			Label: jsii.String(name + " p90"), Period: minute, Statistic: jsii.String("p90"),
		}))
		throttles = append(throttles, fn.MetricThrottles(label("throttles")))
		concurrency = append(concurrency, fn.Metric(jsii.String("ConcurrentExecutions"), &awscloudwatch.MetricOptions{
			Label: jsii.String(name), Period: minute, Statistic: jsii.String("Maximum"),
		}))
	}
	graph := func(title string, left []awscloudwatch.IMetric) awscloudwatch.IWidget {
		return awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
			Title: jsii.String(title), Left: &left, Width: jsii.Number(8),
		})
	}
	dash.AddWidgets(
		graph("Queue depth (visible)", depth),
		graph("Messages in flight", inFlight),
		graph("Age of oldest message (s)", age),
	)
	dash.AddWidgets(
		graph("Dead-letter queues", dlqDepth),
		graph("Invocations", invocations),
		graph("Errors", errs),
	)
	dash.AddWidgets(
		graph("Duration p90 (ms)", duration),
		graph("Throttles", throttles),
		graph("Concurrent executions", concurrency),
	)
	return dash
}
