package crawlstack

import (
	"path/filepath"
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
)

// fnResources is one crawler function and its log group.
type fnResources struct {
	Function awslambda.Function
	Logs     awslogs.LogGroup
}

// newCrawlFunction makes the named function from DistDir/<name>/bootstrap and
// subscribes it to its queue.
//
// No reserved concurrency is set. The event source mapping's MaxConcurrency
// is the cap instead: reserved concurrency below it would make Lambda throttle
// the poller's invocations, which returns messages to the queue, burns their
// receive counts and sends good URLs to the DLQ. Reserving also takes capacity
// from the rest of the account (new accounts may have too little to reserve).
func newCrawlFunction(stack awscdk.Stack, name string, cfg Config, shared map[string]*string, queue awssqs.Queue, tr tracingProps) fnResources {
	fc := cfg.Function(name)
	id := title(name)
	env := make(map[string]*string, len(shared)+1)
	for k, v := range shared {
		env[k] = v
	}
	env[envBatchConcurrency] = jsii.String(strconv.Itoa(fc.BatchConcurrency))
	logs := awslogs.NewLogGroup(stack, jsii.String(id+"Logs"), &awslogs.LogGroupProps{
		Retention:     logRetentions[cfg.LogRetentionDays],
		RemovalPolicy: removalPolicy(cfg),
	})
	fn := awslambda.NewFunction(stack, jsii.String(id+"Function"), &awslambda.FunctionProps{
		Layers:        tr.Layers,
		Tracing:       tr.Tracing, // active (X-Ray) only when tracing goes to X-Ray (tracing.go)
		Description:   jsii.String("crawlstack " + name),
		Runtime:       awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:  awslambda.Architecture_ARM_64(),
		Handler:       jsii.String("bootstrap"),
		Code:          awslambda.Code_FromAsset(jsii.String(filepath.Join(cfg.DistDir, name)), nil),
		Timeout:       awscdk.Duration_Seconds(jsii.Number(float64(fc.TimeoutSeconds))),
		MemorySize:    jsii.Number(float64(fc.MemoryMB)),
		Environment:   &env,
		LoggingFormat: awslambda.LoggingFormat_JSON,
		// No line per invocation at the defaults: the handlers log per batch, and Lambda's
		// START and REPORT lines are INFO system logs (Config.SystemLogLevel).
		ApplicationLogLevelV2: awslambda.ApplicationLogLevel(cfg.LogLevel),
		SystemLogLevelV2:      awslambda.SystemLogLevel(cfg.SystemLogLevel),
		LogGroup:              logs,
		// A crawl is an SQS -> Lambda -> SQS loop by design: parse sends
		// links to schedule, schedule to fetch, fetch to parse (and fetch
		// and schedule to themselves). Lambda's recursive loop detection
		// stops such a chain after about 16 hops, which would end every
		// crawl at a shallow depth. The depth limit, the page budget and
		// the dedup marks in the table end a crawl instead.
		RecursiveLoop: awslambda.RecursiveLoop_ALLOW,
	})
	fn.AddEventSource(awslambdaeventsources.NewSqsEventSource(queue, &awslambdaeventsources.SqsEventSourceProps{
		BatchSize:               jsii.Number(float64(fc.BatchSize)),
		MaxBatchingWindow:       awscdk.Duration_Seconds(jsii.Number(float64(fc.BatchWindowSeconds))),
		MaxConcurrency:          jsii.Number(float64(fc.MaxConcurrency)),
		ReportBatchItemFailures: jsii.Bool(true),
	}))
	return fnResources{Function: fn, Logs: logs}
}
