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
	// CrawlsPrefix holds each crawl's seed report (crawls/<crawl>/seeds.json) and settings
	// (crawls/<crawl>/spec.json, SpecObject), written by schedule.
	CrawlsPrefix = "crawls/"
	// LatestPrefix holds each seed file's pointer to its last crawl (shared/handler/scheduler.LatestPrefix).
	LatestPrefix = CrawlsPrefix + "latest/"
	SpecObject   = "spec.json"
	// SeedReportObject is a crawl's seed report (crawls/<crawl>/seeds.json).
	SeedReportObject = "seeds.json"
	// QuarantinePrefix holds malformed messages, each handler under its own name.
	QuarantinePrefix = "quarantine/"
)

// NewStack builds the whole crawler: storage, queues, functions, the re-crawl
// rule, the alarms (and their notification topic with an email address), the
// dashboard when asked for, the Glue table that Athena queries the records
// with, and the outputs a user needs to start a crawl.
func NewStack(scope constructs.Construct, id string, props *Props) awscdk.Stack {
	stack := awscdk.NewStack(scope, jsii.String(id), &props.StackProps)
	cfg := props.Config

	bucket := newBucket(stack, cfg)
	table := newTable(stack, cfg)
	queues := map[string]pipelineQueue{}
	for _, name := range cfg.pipelineFunctions() {
		queues[name] = newPipelineQueue(stack, name, cfg)
	}
	if cfg.slowLane() {
		queues[FnFetchSlow] = newSlowQueue(stack, cfg, queues[FnFetch])
	}
	notifySeeds(bucket, queues[FnSchedule].Queue)

	env := functionEnv(cfg, bucket, table, queues)
	fns := map[string]fnResources{}
	tr := newTracing(stack, cfg)
	for _, name := range []string{FnSchedule, FnFetch, FnParse} {
		fns[name] = newCrawlFunction(stack, name, cfg, env, queues[name].Queue, tr)
	}
	fetchers := []string{FnFetch}
	if cfg.slowLane() {
		fns[FnFetchSlow] = newCrawlFunction(stack, FnFetchSlow, cfg, env, queues[FnFetchSlow].Queue, tr)
		fetchers = append(fetchers, FnFetchSlow)
	}
	grantPipeline(cfg, bucket, table, queues, fns)
	if cfg.slowLane() {
		grantSlowLane(cfg, bucket, table, queues, fns)
	}
	if cfg.Render {
		fns[FnRender] = newRenderFunction(stack, cfg, env, queues[FnRender])
		for _, f := range fetchers {
			fns[f].Function.AddEnvironment(jsii.String("RENDER_QUEUE_URL"), queues[FnRender].Queue.QueueUrl(), nil)
		}
		grantRender(bucket, table, queues, fns)
	}
	for _, f := range fetchers {
		grantProxiesSecret(cfg, fns[f].Function)
		grantSecretHeaders(cfg, fns[f].Function)
	}
	newRecordStream(cfg, fns[FnParse].Function)
	newRecrawlRule(stack, cfg, fns[FnSchedule].Function)
	mon := newMonitoring(stack, cfg, table, queues, fns)
	newFinish(stack, cfg, fns[FnSchedule].Function, mon.Topic)
	db, _ := newResultsTable(stack, bucket)
	newOutputs(stack, bucket, table, queues, mon.Topic, db)
	return stack
}

// functionEnv is the environment every function gets: the contract with the
// handlers' config structs. Each function also gets its own
// envBatchConcurrency (newCrawlFunction).
func functionEnv(cfg Config, bucket bucketRef, table tableRef, queues map[string]pipelineQueue) map[string]*string {
	env := map[string]*string{
		"CRAWL_BUCKET":       bucket.BucketName(),
		"CRAWL_TABLE":        table.TableName(),
		"SCHEDULE_QUEUE_URL": queues[FnSchedule].Queue.QueueUrl(),
		"FETCH_QUEUE_URL":    queues[FnFetch].Queue.QueueUrl(),
		"PARSE_QUEUE_URL":    queues[FnParse].Queue.QueueUrl(),
	}
	if q, ok := queues[FnFetchSlow]; ok {
		env["FETCHSLOW_QUEUE_URL"] = q.Queue.QueueUrl() // schedule sends runs there; fetchslow re-queues to it
	}
	for k, v := range configEnv(cfg) {
		env[k] = jsii.String(v)
	}
	return env
}

// deployTimeEnvBytes bounds the keys and values of functionEnv that are known
// only at deploy time: the bucket name (at most 63 bytes), the table name (at
// most 255) and four queue URLs (about 140 each); and the one variable that
// differs by function, its batch concurrency.
const deployTimeEnvBytes = len("CRAWL_BUCKET") + 63 + len("CRAWL_TABLE") + 255 +
	len("SCHEDULE_QUEUE_URL") + len("FETCH_QUEUE_URL") + len("PARSE_QUEUE_URL") + len("FETCHSLOW_QUEUE_URL") + 4*140 +
	len(envBatchConcurrency) + 4

// envBatchConcurrency is the variable that tells a function how many records
// of a batch to work on at once (FunctionConfig.BatchConcurrency, at most 4
// digits).
const envBatchConcurrency = "CRAWL_BATCH_CONCURRENCY"

// lambdaEnvLimit is Lambda's limit on a function's environment: all keys and
// values together.
const lambdaEnvLimit = 4096

// configEnv is the part of functionEnv that the configuration decides.
func configEnv(cfg Config) map[string]string {
	env := map[string]string{
		"CRAWL_SCOPE":              cfg.Scope,
		"CRAWL_MAX_DEPTH":          strconv.Itoa(cfg.MaxDepth),
		"CRAWL_MAX_PAGES":          strconv.Itoa(cfg.MaxPages),
		"CRAWL_MAX_PAGES_PER_HOST": strconv.Itoa(cfg.MaxPagesPerHost),
		"CRAWL_INCLUDE":            patternsEnv(cfg.Include),
		"CRAWL_EXCLUDE":            patternsEnv(cfg.Exclude),
		"CRAWL_HOST_RPS":           strconv.FormatFloat(cfg.HostRPS, 'f', -1, 64),
		"CRAWL_USER_AGENT":         cfg.UserAgent,
		"CRAWL_MAX_RECEIVE":        strconv.Itoa(cfg.MaxReceiveCount),
		"CRAWL_MAX_TRIES":          strconv.Itoa(cfg.MaxTries),
		"CRAWL_WARC_INDEX":         cfg.WARCIndex,
		"CRAWL_RETRY_WAIT":         strconv.Itoa(cfg.RetryWaitSeconds) + "s",
		"CRAWL_ALLOW_NET":          cfg.AllowNet,
		"CRAWL_RECRAWL_PREFIX":     cfg.RecrawlPrefix,
		"CRAWL_BUDGET_USD":         strconv.FormatFloat(cfg.BudgetUSD, 'f', -1, 64),
		// Runs of URLs for polite hosts, which schedule sends to the slow lane (slowlane.go).
		"CRAWL_RUN_URLS": strconv.Itoa(cfg.RunURLs),
		// The namespace of the EMF metrics, which the dashboard and the budget alarm read.
		"CRAWL_METRICS_NAMESPACE": MetricsNamespace,
		// The ledger counts Lambda's START and REPORT lines only where they are written.
		"CRAWL_SYSTEM_LOG_LEVEL": cfg.SystemLogLevel,
		// Fetch messages waiting for a politeness slot come back this much early: the fetch
		// event source's batching window would otherwise make them late for it.
		"CRAWL_SLOT_LEAD": strconv.Itoa(cfg.Function(FnFetch).BatchWindowSeconds) + "s",
	}
	if cfg.TLSFingerprint != "" {
		env["CRAWL_TLS_FINGERPRINT"] = cfg.TLSFingerprint
	}
	if cfg.RetryClasses != "" {
		env["CRAWL_RETRY_CLASSES"] = cfg.RetryClasses
	}
	for k, v := range proxiesEnv(cfg) {
		env[k] = v
	}
	for k, v := range secretHeadersEnv(cfg) {
		env[k] = v
	}
	if !cfg.Metrics {
		env["OTEL_METRICS_EXPORTER"] = "none" // package telemetry: no EMF line, no OTLP metric
	}
	if cfg.FinishEvent {
		for k, v := range finishEnv(cfg) {
			env[k] = v
		}
	}
	// The spans to the collector layer, if any; the metrics stay EMF lines (tracing.go).
	for k, v := range tracingEnv(cfg) {
		env[k] = v
	}
	return env
}

// envBytes is the size Lambda counts for the environment: at most
// deployTimeEnvBytes for what the deploy fills in, plus the configured part.
func envBytes(cfg Config) int {
	n := deployTimeEnvBytes
	for k, v := range configEnv(cfg) {
		n += len(k) + len(v)
	}
	return n
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
