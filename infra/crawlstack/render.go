package crawlstack

import (
	"path/filepath"
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecrassets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"
)

// The render step (context render=true): a function that runs the scripts of the pages that a
// crawl's spec asks to render in headless Chromium, between fetch and parse
// (shared/handler/renderer), with its own queue, DLQ and alarms. Fetch sends a rendering crawl's
// parse messages to its queue (RENDER_QUEUE_URL); it forwards them to parse. Off (the default)
// the stack has none of it, and its idle bill is unchanged.
//
// Chromium is packaged as a container image: DistDir/render holds the bootstrap and the
// Dockerfile (functions/render/Dockerfile: Debian's chromium package) it is built from. cdk synth
// only stages that folder; cdk deploy builds and pushes the image, and needs a Docker engine for
// it (docs/deploy.md).

// renderImageFile is the Dockerfile the render image is built from, in DistDir/render.
const renderImageFile = "Dockerfile"

// DefaultRenderFunction sizes the render function: a browser needs memory (Chromium takes about
// 1 GB with a page or two open; 2048 MB also buys about 1.2 vCPU), a page takes seconds, and a
// batch of 5 with 2 at once stays well inside the timeout at the default wait of 10 s a page.
func DefaultRenderFunction() FunctionConfig {
	return FunctionConfig{TimeoutSeconds: 120, MemoryMB: 2048, MaxConcurrency: 2, BatchSize: 5, BatchWindowSeconds: 2, BatchConcurrency: 2}
}

// pipelineFunctions are the stack's functions in a fixed order (a stable template): the three,
// and render when it is on.
func (c Config) pipelineFunctions() []string {
	if c.Render {
		return []string{FnSchedule, FnFetch, FnParse, FnRender}
	}
	return []string{FnSchedule, FnFetch, FnParse}
}

// newRenderFunction makes the render function from its image and subscribes it to its queue, as
// newCrawlFunction does for the others.
func newRenderFunction(stack awscdk.Stack, cfg Config, shared map[string]*string, q pipelineQueue) fnResources {
	fc := cfg.Function(FnRender)
	env := make(map[string]*string, len(shared)+1)
	for k, v := range shared {
		env[k] = v
	}
	env[envBatchConcurrency] = jsii.String(strconv.Itoa(fc.BatchConcurrency))
	logs := awslogs.NewLogGroup(stack, jsii.String("RenderLogs"), &awslogs.LogGroupProps{
		Retention:     logRetentions[cfg.LogRetentionDays],
		RemovalPolicy: removalPolicy(cfg),
	})
	fn := awslambda.NewDockerImageFunction(stack, jsii.String("RenderFunction"), &awslambda.DockerImageFunctionProps{
		Description: jsii.String("crawlstack render"),
		Code: awslambda.DockerImageCode_FromImageAsset(jsii.String(filepath.Join(cfg.DistDir, FnRender)), &awslambda.AssetImageCodeProps{
			File: jsii.String(renderImageFile), Platform: awsecrassets.Platform_LINUX_ARM64()}),
		Architecture:          awslambda.Architecture_ARM_64(),
		Timeout:               awscdk.Duration_Seconds(jsii.Number(float64(fc.TimeoutSeconds))),
		MemorySize:            jsii.Number(float64(fc.MemoryMB)),
		Environment:           &env,
		LoggingFormat:         awslambda.LoggingFormat_JSON,
		ApplicationLogLevelV2: awslambda.ApplicationLogLevel(cfg.LogLevel),
		SystemLogLevelV2:      awslambda.SystemLogLevel(cfg.SystemLogLevel),
		LogGroup:              logs,
		// fetch -> render -> parse -> schedule -> fetch is a loop by design (newCrawlFunction).
		RecursiveLoop: awslambda.RecursiveLoop_ALLOW,
	})
	fn.AddEventSource(awslambdaeventsources.NewSqsEventSource(q.Queue, &awslambdaeventsources.SqsEventSourceProps{
		BatchSize:               jsii.Number(float64(fc.BatchSize)),
		MaxBatchingWindow:       awscdk.Duration_Seconds(jsii.Number(float64(fc.BatchWindowSeconds))),
		MaxConcurrency:          jsii.Number(float64(fc.MaxConcurrency)),
		ReportBatchItemFailures: jsii.Bool(true),
	}))
	return fnResources{Function: fn, Logs: logs}
}

// grantRender gives the render function what its handler does, and fetch its send to the render
// queue: render reads the pages fetch stored and writes its own WARC files (pages/), reads the
// crawl's settings, reads parse's done marks by key (crawlstate IsMessageParsed: GetItem), counts
// its bill into the crawl's shards and crawl item as every function's ledger does, sends to
// parse, and quarantines under quarantine/render/. Nothing else: no Scan, no Query, no delete.
func grantRender(bucket bucketRef, table tableRef, queues map[string]pipelineQueue, fns map[string]fnResources) {
	fn := fns[FnRender].Function
	queues[FnRender].Queue.GrantSendMessages(fns[FnFetch].Function)
	queues[FnParse].Queue.GrantSendMessages(fn)
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("dynamodb:GetItem"),
		Resources: jsii.Strings(*table.TableArn()),
	}))
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:    jsii.Strings("dynamodb:PutItem", "dynamodb:UpdateItem"),
		Resources:  jsii.Strings(*table.TableArn()),
		Conditions: byLeadingKeys([]string{crawlParts, crawlItems}),
	}))
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("s3:PutObject", "s3:GetObject"),
		Resources: jsii.Strings(*bucket.ArnForObjects(jsii.String(PagesPrefix + "*"))),
	}))
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("s3:GetObject"),
		Resources: jsii.Strings(*bucket.ArnForObjects(jsii.String(CrawlsPrefix + "*/" + SpecObject))),
	}))
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("s3:PutObject"),
		Resources: jsii.Strings(*bucket.ArnForObjects(jsii.String(QuarantinePrefix + FnRender + "/*"))),
	}))
}
