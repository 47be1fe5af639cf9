package crawlstack

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Props configure a [NewStack] call.
type Props struct {
	awscdk.StackProps
	// Config holds every crawler setting; see [ConfigFromContext].
	Config Config
}

// Key prefixes of the bucket. They are part of the contract with the handlers.
const (
	SeedsPrefix   = "seeds/"
	PagesPrefix   = "pages/"
	RecordsPrefix = "records/"
	// CrawlsPrefix holds each crawl's seed report (crawls/<crawl>/seeds.json), written by schedule.
	CrawlsPrefix = "crawls/"
	// QuarantinePrefix holds malformed messages, each handler under its own name.
	QuarantinePrefix = "quarantine/"
)

// NewStack builds the whole crawler: storage, queues, functions, the re-crawl
// rule, the alarms (and their notification topic with an email address), the
// dashboard when asked for, and the outputs a user needs to start a crawl.
func NewStack(scope constructs.Construct, id string, props *Props) awscdk.Stack {
	stack := awscdk.NewStack(scope, jsii.String(id), &props.StackProps)
	cfg := props.Config

	bucket := newBucket(stack, cfg)
	table := newTable(stack, cfg)
	queues := map[string]pipelineQueue{}
	for _, name := range []string{FnSchedule, FnFetch, FnParse} {
		queues[name] = newPipelineQueue(stack, name, cfg)
	}
	notifySeeds(bucket, queues[FnSchedule].Queue)

	env := functionEnv(cfg, bucket, table, queues)
	fns := map[string]fnResources{}
	for _, name := range []string{FnSchedule, FnFetch, FnParse} {
		fns[name] = newCrawlFunction(stack, name, cfg, env, queues[name].Queue)
	}
	grantPipeline(cfg, bucket, table, queues, fns)
	newRecrawlRule(stack, cfg, fns[FnSchedule].Function)
	mon := newMonitoring(stack, cfg, queues, fns)
	newOutputs(stack, bucket, table, queues, mon.Topic)
	return stack
}

// functionEnv is the environment every function gets: the contract with the
// handlers' config structs.
func functionEnv(cfg Config, bucket bucketRef, table tableRef, queues map[string]pipelineQueue) map[string]*string {
	return map[string]*string{
		"CRAWL_BUCKET":             bucket.BucketName(),
		"CRAWL_TABLE":              table.TableName(),
		"SCHEDULE_QUEUE_URL":       queues[FnSchedule].Queue.QueueUrl(),
		"FETCH_QUEUE_URL":          queues[FnFetch].Queue.QueueUrl(),
		"PARSE_QUEUE_URL":          queues[FnParse].Queue.QueueUrl(),
		"CRAWL_SCOPE":              jsii.String(cfg.Scope),
		"CRAWL_MAX_DEPTH":          jsii.String(strconv.Itoa(cfg.MaxDepth)),
		"CRAWL_MAX_PAGES":          jsii.String(strconv.Itoa(cfg.MaxPages)),
		"CRAWL_MAX_PAGES_PER_HOST": jsii.String(strconv.Itoa(cfg.MaxPagesPerHost)),
		"CRAWL_INCLUDE":            jsii.String(patternsEnv(cfg.Include)),
		"CRAWL_EXCLUDE":            jsii.String(patternsEnv(cfg.Exclude)),
		"CRAWL_HOST_RPS":           jsii.String(strconv.FormatFloat(cfg.HostRPS, 'f', -1, 64)),
		"CRAWL_USER_AGENT":         jsii.String(cfg.UserAgent),
		"CRAWL_MAX_RECEIVE":        jsii.String(strconv.Itoa(cfg.MaxReceiveCount)),
		"CRAWL_ALLOW_NET":          jsii.String(cfg.AllowNet),
		"CRAWL_RECRAWL_PREFIX":     jsii.String(cfg.RecrawlPrefix),
	}
}

// patternsEnv encodes include or exclude patterns as the handlers read them
// back: a JSON array, since a regexp may contain commas (unescaped <, > and &,
// so the value reads as written in the Lambda console); empty when there are
// none, which the handlers take as unset.
func patternsEnv(patterns []string) string {
	if len(patterns) == 0 {
		return ""
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(patterns); err != nil { // a []string always encodes
		panic(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
