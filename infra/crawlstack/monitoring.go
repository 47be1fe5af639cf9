package crawlstack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/jsii-runtime-go"
)

// monitoring is what newMonitoring made; each part is nil when its context
// key turned it off.
type monitoring struct {
	Alarms    []awscloudwatch.Alarm
	Dashboard awscloudwatch.Dashboard // only with cfg.Dashboard
	Topic     awssns.Topic            // only with cfg.AlarmEmail
}

// newMonitoring adds the alarms (unless cfg.Alarms is false: the core ones on
// the dead-letter queues, stalled crawls and budgets, and with cfg.ExtraAlarms
// the queues' age and the pipeline's errors and throttles), the topic that
// mails their state changes (only with cfg.AlarmEmail) and the dashboard (only
// with cfg.Dashboard). Without AlarmEmail the alarms have no actions.
//
// An alarm is billed for each metric it reads, $0.10 a month, and the stack's
// idle bill has to stay under $1.50 a month (docs/cost.md): the core alarms
// read at most five metrics, the extra ones eleven more.
func newMonitoring(stack awscdk.Stack, cfg Config, table tableRef, queues map[string]pipelineQueue, fns map[string]fnResources) monitoring {
	var mon monitoring
	minute := awscdk.Duration_Minutes(jsii.Number(1))
	var depth, inFlight, age, dlqDepth, invocations, errs, duration, throttles, concurrency []awscloudwatch.IMetric
	for _, name := range cfg.pipelineFunctions() {
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
		oldest := q.Queue.MetricApproximateAgeOfOldestMessage(&awscloudwatch.MetricOptions{
			Period: minute, Statistic: jsii.String("Maximum"),
		})
		if cfg.Alarms {
			mon.Alarms = append(mon.Alarms,
				dlqVisible.CreateAlarm(stack, jsii.String(id+"DLQNotEmpty"), &awscloudwatch.CreateAlarmOptions{
					AlarmDescription:   jsii.String("crawlstack: messages in the " + name + " dead-letter queue"),
					Threshold:          jsii.Number(0),
					ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
					EvaluationPeriods:  jsii.Number(1),
					TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
				}))
		}
		if cfg.Alarms && cfg.ExtraAlarms {
			mon.Alarms = append(mon.Alarms,
				oldest.CreateAlarm(stack, jsii.String(id+"QueueStale"), &awscloudwatch.CreateAlarmOptions{
					AlarmDescription:   jsii.String("crawlstack: the " + name + " queue is not being drained"),
					Threshold:          jsii.Number(float64(cfg.OldestMessageAlarmSeconds)),
					ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
					EvaluationPeriods:  jsii.Number(5),
					TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
				}),
			)
		}

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
	if cfg.Alarms {
		mon.Alarms = append(mon.Alarms, pipelineAlarms(stack, cfg, table, fns)...)
	}
	if cfg.AlarmEmail != "" && len(mon.Alarms) > 0 {
		mon.Topic = newAlarmTopic(stack, cfg.AlarmEmail, finishMailed(cfg))
		action := awscloudwatchactions.NewSnsAction(mon.Topic)
		for _, a := range mon.Alarms {
			a.AddAlarmAction(action)
			a.AddOkAction(action)
		}
	}
	if !cfg.Dashboard {
		return mon
	}

	mon.Dashboard = awscloudwatch.NewDashboard(stack, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		// Named after the stack so users find it; dashboard names are per account.
		DashboardName:   jsii.String(*stack.StackName() + "-" + *stack.Region()),
		DefaultInterval: awscdk.Duration_Hours(jsii.Number(3)),
	})
	graph := func(title string, left []awscloudwatch.IMetric) awscloudwatch.IWidget {
		return awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
			Title: jsii.String(title), Left: &left, Width: jsii.Number(8),
		})
	}
	mon.Dashboard.AddWidgets(
		graph("Queue depth (visible)", depth),
		graph("Messages in flight", inFlight),
		graph("Age of oldest message (s)", age),
	)
	mon.Dashboard.AddWidgets(
		graph("Dead-letter queues", dlqDepth),
		graph("Invocations", invocations),
		graph("Errors", errs),
	)
	mon.Dashboard.AddWidgets(
		graph("Duration p90 (ms)", duration),
		graph("Throttles", throttles),
		graph("Concurrent executions", concurrency),
	)
	for _, row := range crawlWidgets(fns) {
		mon.Dashboard.AddWidgets(row...)
	}
	return mon
}

// newAlarmTopic is the SNS topic the alarms publish to, with an email
// subscription to addr. AWS mails addr a confirmation link first; nothing is
// delivered until it is followed.
//
// The topic is encrypted with a KMS key of the stack's own: CloudWatch alarms
// cannot publish to a topic encrypted with the AWS managed key alias/aws/sns,
// whose key policy does not let cloudwatch.amazonaws.com use it and cannot be
// changed. The key costs $1 a month while it exists. Key rotation is off: each
// rotation would add $1 a month, and the key only protects notifications while
// SNS delivers them. The key is deleted with the topic (after KMS's 7-day
// waiting period, during which it is not billed), whatever retainData says:
// no stored data depends on it.
//
// The topic keeps SNS's default access policy, which lets the account's own
// CloudWatch alarms publish. EnforceSSL is not set: it would replace that
// policy, and the alarms would then need a statement of their own.
func newAlarmTopic(stack awscdk.Stack, addr string, events bool) awssns.Topic {
	key := awskms.NewKey(stack, jsii.String("AlarmTopicKey"), &awskms.KeyProps{
		Description:       jsii.String("crawlstack: encrypts the alarm notification topic"),
		EnableKeyRotation: jsii.Bool(false),
		PendingWindow:     awscdk.Duration_Days(jsii.Number(7)),
		RemovalPolicy:     awscdk.RemovalPolicy_DESTROY,
	})
	// The services that publish to the topic use its key.
	allow := func(sid, service string) {
		key.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String(sid),
			Effect:     awsiam.Effect_ALLOW,
			Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String(service), nil)},
			Actions:    jsii.Strings("kms:Decrypt", "kms:GenerateDataKey*"),
			Resources:  jsii.Strings("*"),
		}), nil)
	}
	allow("AllowCloudWatchAlarmsToPublish", "cloudwatch.amazonaws.com")
	if events { // the rule that mails each crawl's end (newFinish)
		allow("AllowEventBridgeToPublish", "events.amazonaws.com")
	}
	topic := awssns.NewTopic(stack, jsii.String("AlarmTopic"), &awssns.TopicProps{
		// The sender name of the notification emails.
		DisplayName: jsii.String("crawlstack alarms"),
		MasterKey:   key,
	})
	topic.AddSubscription(awssnssubscriptions.NewEmailSubscription(jsii.String(addr), nil))
	return topic
}
