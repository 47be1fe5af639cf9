package crawlstack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
)

// The slow lane (context runUrls of 2 or more; on by default, runs of 10): runs of URLs of polite hosts
// (a request a second or slower), which the fetcher works one after another, waiting in place
// for each slot, go to a queue and a function of their own. fetchslow runs the same fetch handler
// (functions/fetchslow) at 128 MB instead of fetch's 512 MB: a run holds one page in flight, and
// its wait is billed by the GB-second. Its runs then never hold up the fast hosts' messages in
// fetch's two invocations (docs/cost.md, "The slow lane").
//
// Its dead-letter queue is fetch's: one alarm (FetchDLQNotEmpty) watches both, which keeps the
// idle bill under $1.50 a month with the lane's pollers (TestIdleBillUnderOneFiftyAMonth). SQS
// lets several source queues share a dead-letter queue, and its StartMessageMoveTask without a
// destination moves each message back to the queue it came from; `crawl redrive fetch` names
// fetch, which works a run as the lane does (at fetch's memory).

// FnFetchSlow is the slow lane's function, only with Config.RunURLs of 2 or more.
const FnFetchSlow = "fetchslow"

// DefaultRunURLs is the stack's runUrls: how many URLs of one polite host a fetch message carries
// (CRAWL_RUN_URLS), the same as frontier.DefaultRunURLs. 0 or 1 is none, and then the stack has no
// slow lane. On by default: with runs of 10 through the lane, `make cost` measured the wide crawl
// (100 polite hosts) at $1.74 in 2m21s against $9.17 in 3m06s without runs, and the single host at
// about $4 against about $19 (docs/cost.md, "The slow lane"). The lane's queue adds its idle
// pollers, and no alarm (TestIdleBillUnderOneFiftyAMonth). runUrls=0 turns runs and the lane off.
// The embedded `crawl run` keeps its own default, runs off (pipeline.DefaultConfig).
const DefaultRunURLs = 10

// maxRunURLs is the longest run a fetch message may carry (message.MaxFetchURLs).
const maxRunURLs = 60

// DefaultFetchSlowFunction sizes the slow lane's function: fetch's timeout, batches and
// concurrency, at the least memory Lambda has. A batch's runs are worked on side by side, each
// with one page in flight; half the memory bounds the bodies held at once (fetcher.MemoryBudgetFor).
func DefaultFetchSlowFunction() FunctionConfig {
	return FunctionConfig{TimeoutSeconds: 120, MemoryMB: 128, MaxConcurrency: 2, BatchSize: 100, BatchWindowSeconds: 2, BatchConcurrency: 100}
}

// slowLane reports whether the stack has the slow lane: runs of URLs are on.
func (c Config) slowLane() bool { return c.RunURLs >= 2 }

// newSlowQueue makes the slow lane's queue, whose dead-letter queue is fetch's.
func newSlowQueue(stack awscdk.Stack, cfg Config, fetch pipelineQueue) pipelineQueue {
	q := awssqs.NewQueue(stack, jsii.String(title(FnFetchSlow)+"Queue"), &awssqs.QueueProps{
		RetentionPeriod:     awscdk.Duration_Days(jsii.Number(queueRetentionDays)),
		VisibilityTimeout:   awscdk.Duration_Seconds(jsii.Number(float64(cfg.Function(FnFetchSlow).VisibilityTimeoutSeconds()))),
		Encryption:          awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:          jsii.Bool(true),
		MaxMessageSizeBytes: jsii.Number(maxMessageBytes),
		DeadLetterQueue: &awssqs.DeadLetterQueue{
			Queue:           fetch.DLQ,
			MaxReceiveCount: jsii.Number(float64(cfg.MaxReceiveCount)),
		},
	})
	return pipelineQueue{Queue: q, DLQ: fetch.DLQ}
}

// grantSlowLane gives the slow lane's function what fetch's handler does (the same calls: its
// table partitions and reads, pages/, the crawls' settings, its own quarantine/fetchslow/), its
// sends (back to its own queue, to parse, and to render when the stack renders), and schedule its
// send to the lane's queue. The proxies' secret and the secret headers are granted as fetch's
// (newStack).
func grantSlowLane(cfg Config, bucket bucketRef, table tableRef, queues map[string]pipelineQueue, fns map[string]fnResources) {
	fn := fns[FnFetchSlow].Function
	queues[FnFetchSlow].Queue.GrantSendMessages(fns[FnSchedule].Function)
	queues[FnFetchSlow].Queue.GrantSendMessages(fn)
	queues[FnParse].Queue.GrantSendMessages(fn)
	if cfg.Render {
		queues[FnRender].Queue.GrantSendMessages(fn)
	}
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings(tableActions[FnFetch]...),
		Resources: jsii.Strings(*table.TableArn()),
	}))
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:    jsii.Strings("dynamodb:PutItem", "dynamodb:UpdateItem"),
		Resources:  jsii.Strings(*table.TableArn()),
		Conditions: byLeadingKeys(tableWrites[FnFetch]),
	}))
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("s3:PutObject"),
		Resources: jsii.Strings(*bucket.ArnForObjects(jsii.String(QuarantinePrefix + FnFetchSlow + "/*"))),
	}))
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("s3:GetObject"),
		Resources: jsii.Strings(*bucket.ArnForObjects(jsii.String(CrawlsPrefix + "*/" + SpecObject))),
	}))
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("s3:PutObject", "s3:GetObject"),
		Resources: jsii.Strings(*bucket.ArnForObjects(jsii.String(PagesPrefix + "*"))),
	}))
}
