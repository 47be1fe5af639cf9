package crawlstack

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
)

// Config is every setting of the stack. The zero value is not useful; start
// from [DefaultConfig] or [ConfigFromContext].
type Config struct {
	// DistDir holds one folder per function with its `bootstrap` binary,
	// relative to the directory cdk runs in.
	DistDir string
	// Scope limits which discovered links are followed: host, domain or any.
	Scope string
	// MaxDepth is the maximum link depth from a seed.
	MaxDepth int
	// MaxPages is the page budget of one crawl.
	MaxPages int
	// MaxPagesPerHost is the page budget of one host in one crawl, a
	// spider-trap guard; 0 means no limit.
	MaxPagesPerHost int
	// Include and Exclude are Go (RE2) regexps: a URL must match one of
	// Include (when there are any) and none of Exclude to be followed.
	Include, Exclude []string
	// HostRPS is the politeness limit: requests per second to one host.
	HostRPS float64
	// BudgetUSD stops a crawl from admitting URLs once its metered bill (its
	// ledger in the table) reaches this many dollars; 0 means no budget.
	BudgetUSD float64
	// UserAgent is sent with every request and matched against robots.txt; "browser" sends the
	// User-Agent of the browser whose ClientHello TLSFingerprint sends.
	UserAgent string
	// TLSFingerprint is the TLS ClientHello of the fetches: "" (Go's own) or "chrome" (see
	// fingerprint.go).
	TLSFingerprint string
	// Proxies is a comma-separated list of proxy URLs without credentials (http://, https://,
	// socks5://host:port) that carry every fetch; ProxyRotation is request (they take turns, the
	// default) or host (a host's requests through one). ProxiesSecret names an SSM parameter
	// ("ssm:<name>", a SecureString) or a Secrets Manager secret ("secretsmanager:<name or ARN>")
	// that lists proxy URLs with their credentials: only the fetch function may read it, and only
	// when it is set (see proxies.go).
	Proxies, ProxyRotation, ProxiesSecret string
	// SecretHeaderParameterPrefix and SecretHeaderSecretPrefix start the names of the SSM
	// parameters and Secrets Manager secrets that crawl specs' secret headers may name: the fetch
	// function alone may read those (see secretheaders.go). Empty (the default): none, and a spec
	// that names a secret is refused.
	SecretHeaderParameterPrefix, SecretHeaderSecretPrefix string
	// RecordStreamQueueArn names a standard SQS queue that the parse function sends each page's
	// record to as it stores it (see recordstream.go). Empty (the default): no stream.
	RecordStreamQueueArn string
	// AllowNet is a comma-separated list of CIDRs that fetch may reach even
	// though they are not public. Empty by default.
	AllowNet string
	// RecrawlPrefix is the key prefix whose seed files a scheduled tick re-crawls.
	RecrawlPrefix string
	// ScheduleExpression is the EventBridge rate() or cron() expression of re-crawls.
	ScheduleExpression string
	// ScheduleEnabled turns the re-crawl rule on.
	ScheduleEnabled bool
	// MaxReceiveCount is the receives before a message moves to its DLQ.
	MaxReceiveCount int
	// MaxTries bounds the requests of a URL whose fetch keeps failing with
	// http_5xx, http_429, timeout or connect (or whose robots.txt is down);
	// RetryWaitSeconds is the wait after its first failure, each next one 4
	// times longer (at most 15 times this). Retries go back to the queue with
	// their wait and burn no receive.
	MaxTries, RetryWaitSeconds int
	// RetryClasses give some error classes their own tries or first wait over
	// MaxTries and RetryWaitSeconds: "timeout=2,http_5xx=6/10s" (CLASS=TRIES,
	// CLASS=TRIES/WAIT or CLASS=/WAIT; empty: none). A crawl spec's retry
	// section may lower any class's tries, up to the most this policy gives.
	RetryClasses string
	// WARCIndex is where the WARC files' CDXJ index is: "crawl" (the default: none beside the
	// files; `crawl index --backend aws CRAWL` builds the crawl's, a GET a file and one PUT) or
	// "file" (one beside each file, as it is stored: a second PUT per fetch batch).
	WARCIndex string
	// LogRetentionDays is how long function logs are kept.
	LogRetentionDays int
	// OldestMessageAlarmSeconds is the age of the oldest queued message that raises an alarm.
	OldestMessageAlarmSeconds int
	// Dashboard creates the CloudWatch dashboard. Off by default: an account
	// pays for every dashboard beyond its first 3.
	Dashboard bool
	// Alarms creates the core alarms, which read at most five metrics (an
	// alarm is billed $0.10 a month for each metric it reads): one on each
	// dead-letter queue, one on stalled crawls (with FinishEvent) and one on
	// the crawls' budgets (with BudgetUSD). ExtraAlarms adds the queues' age,
	// the functions' errors and throttles and the table's throttles (11 alarm
	// metrics more: $1.10 a month). docs/cost.md has the idle bill.
	Alarms, ExtraAlarms bool
	// AlarmEmail, when set, receives every alarm's state changes through an
	// encrypted SNS topic. It needs Alarms.
	AlarmEmail string
	// FinishEvent has schedule announce each crawl's end, once, with a
	// "Crawl Finished" event on the account's default EventBridge bus (a
	// drain check every FinishCheckSeconds per running crawl: package
	// finish). FinishMail, with AlarmEmail, adds a rule that mails the event
	// through the alarm topic.
	FinishEvent        bool
	FinishCheckSeconds int
	FinishMail         bool
	// FinishStallMinutes is how long a crawl's counters stand still with
	// work left before its checks announce it stalled ("Crawl Stalled" and
	// the CrawlStalled alarm) and stop.
	FinishStallMinutes int
	// Metrics has the functions write the crawl's 8 metric series as EMF
	// lines (one of under 1 KB an invocation, billed as log ingestion,
	// and each series by the hour it receives data). False sets
	// OTEL_METRICS_EXPORTER=none: no crawl metric, so the dashboard's crawl
	// charts stay empty and the CrawlOverBudget and CrawlStalled alarms never
	// fire.
	Metrics bool
	// OTelCollectorLayerARN, when set, turns tracing on end to end (tracing.go):
	// every function gets that Lambda layer (an OpenTelemetry collector
	// extension for arm64, such as AWS Distro for OpenTelemetry's) and a
	// second layer with the collector's configuration, shipped with the stack;
	// the functions send their spans to the collector over OTLP/HTTP on
	// localhost:4318. The collector exports them to X-Ray (the functions then
	// get active tracing and may call xray:PutTraceSegments and
	// xray:PutTelemetryRecords), or, with OTelTracesEndpoint, over OTLP/HTTP
	// to that endpoint. Metrics stay EMF lines either way, so the dashboard
	// and the alarms keep working.
	OTelCollectorLayerARN string
	// OTelTracesEndpoint, when set with OTelCollectorLayerARN, is the
	// OTLP/HTTP endpoint (https://host[:port][/path], the collector adds
	// /v1/traces) that the collector sends the spans to instead of X-Ray.
	OTelTracesEndpoint string
	// RetainData keeps the bucket, the table and the logs when the stack is destroyed.
	RetainData bool
	// LogLevel is the functions' application log level (DEBUG, INFO, WARN or
	// ERROR): Lambda drops their lines below it. SystemLogLevel is Lambda's
	// own (DEBUG, INFO or WARN): at WARN, the default, Lambda writes no START
	// and REPORT lines, about 280 bytes an invocation (their figures are in
	// the functions' CloudWatch metrics too).
	LogLevel, SystemLogLevel string
	// PointInTimeRecovery turns on the table's continuous backups, billed
	// per GB-month of table size for as long as it is on.
	PointInTimeRecovery bool
	// Pages, Records and Quarantine are what S3 does with the objects under
	// pages/, records/ and quarantine/ as they age. No default deletes anything.
	Pages, Records, Quarantine PrefixLifecycle
	// Schedule, Fetch and Parse size the three functions.
	Schedule, Fetch, Parse FunctionConfig
	// Render turns on the render step (context render=true): a render function with its queue,
	// DLQ and alarms, between fetch and parse, for crawls whose spec has a render section. Off, the
	// stack has none, and costs nothing more (render.go).
	Render bool
	// RenderFunction sizes the render function (render.go, DefaultRenderFunction).
	RenderFunction FunctionConfig
	// RunURLs is how many URLs of one polite host a fetch message carries (context runUrls,
	// CRAWL_RUN_URLS): 2 or more also makes the slow lane, a queue and function of their own for
	// those runs (slowlane.go); 0 or 1, no runs and no lane.
	RunURLs int
	// FetchSlow sizes the slow lane's function (DefaultFetchSlowFunction).
	FetchSlow FunctionConfig
}

// Function names: each is the folder under DistDir, the construct id prefix
// and the Go package under functions/ in the root module.
const (
	FnSchedule = "schedule"
	FnFetch    = "fetch"
	FnParse    = "parse"
	// FnRender is the render step, only with Config.Render.
	FnRender = "render"
)

// DefaultConfig returns the settings used where the context sets nothing.
//
// Nothing expires by default. WARC files under pages/ move to Standard-IA
// once they are 90 days old: most are over 128 KB, they are rarely read after
// parse, and the transition fee per object takes months to pay back, so only
// what has already been kept a while moves (docs/deploy.md has the numbers).
// Records files (one per parse batch of up to 100 pages) are the output people
// read, so they stay in Standard; quarantine/ holds a few small files.
func DefaultConfig() Config {
	fns := DefaultFunctions()
	return Config{
		DistDir:                   "../dist",
		Scope:                     "host",
		MaxDepth:                  16, // crawl run's (pipeline.DefaultConfig)
		MaxPages:                  1000,
		MaxPagesPerHost:           100_000,
		HostRPS:                   1,
		UserAgent:                 "crawlstack/0.1 (+https://github.com/crawlstack/crawlstack)",
		RecrawlPrefix:             "seeds/",
		ScheduleExpression:        "rate(1 day)",
		ScheduleEnabled:           false,
		MaxReceiveCount:           5,
		MaxTries:                  4,
		RetryWaitSeconds:          2,
		WARCIndex:                 "crawl",
		LogRetentionDays:          30,
		OldestMessageAlarmSeconds: 3600,
		Metrics:                   true,
		Dashboard:                 false,
		Alarms:                    true,
		ExtraAlarms:               false,
		AlarmEmail:                "",
		FinishEvent:               true,
		FinishCheckSeconds:        60,
		FinishStallMinutes:        60,
		FinishMail:                true,
		RetainData:                true,
		LogLevel:                  "INFO",
		SystemLogLevel:            "WARN",
		PointInTimeRecovery:       true,
		Pages:                     PrefixLifecycle{TransitionDays: 90},
		Records:                   PrefixLifecycle{},
		Quarantine:                PrefixLifecycle{},
		Schedule:                  fns[FnSchedule],
		Fetch:                     fns[FnFetch],
		Parse:                     fns[FnParse],
		RenderFunction:            DefaultRenderFunction(),
		RunURLs:                   DefaultRunURLs,
		FetchSlow:                 fns[FnFetchSlow],
	}
}

var (
	rateExpr = regexp.MustCompile(`^rate\(([1-9][0-9]*) (minute|minutes|hour|hours|day|days)\)$`)
	cronExpr = regexp.MustCompile(`^cron\(\S+( \S+){5}\)$`)
	// emailAddr is the address syntax browsers accept for <input type=email>
	// (the WHATWG pattern), with at least one dot in the domain: one plain
	// address, no display name, no list.
	emailAddr = regexp.MustCompile("^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@" +
		`[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$`)
)

// logRetentions maps the retention periods CloudWatch Logs accepts, in days,
// to their CDK names.
var logRetentions = map[int]awslogs.RetentionDays{
	1: awslogs.RetentionDays_ONE_DAY, 3: awslogs.RetentionDays_THREE_DAYS,
	5: awslogs.RetentionDays_FIVE_DAYS, 7: awslogs.RetentionDays_ONE_WEEK,
	14: awslogs.RetentionDays_TWO_WEEKS, 30: awslogs.RetentionDays_ONE_MONTH,
	60: awslogs.RetentionDays_TWO_MONTHS, 90: awslogs.RetentionDays_THREE_MONTHS,
	120: awslogs.RetentionDays_FOUR_MONTHS, 150: awslogs.RetentionDays_FIVE_MONTHS,
	180: awslogs.RetentionDays_SIX_MONTHS, 365: awslogs.RetentionDays_ONE_YEAR,
	400: awslogs.RetentionDays_THIRTEEN_MONTHS, 545: awslogs.RetentionDays_EIGHTEEN_MONTHS,
	731: awslogs.RetentionDays_TWO_YEARS, 1096: awslogs.RetentionDays_THREE_YEARS,
	1827: awslogs.RetentionDays_FIVE_YEARS, 2192: awslogs.RetentionDays_SIX_YEARS,
	2557: awslogs.RetentionDays_SEVEN_YEARS, 2922: awslogs.RetentionDays_EIGHT_YEARS,
	3288: awslogs.RetentionDays_NINE_YEARS, 3653: awslogs.RetentionDays_TEN_YEARS,
}

// Validate reports every setting that the stack or AWS would reject.
func (c Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("context %q: "+format, append([]any{key}, args...)...))
	}
	if c.DistDir == "" {
		bad("distDir", "must not be empty")
	}
	switch c.Scope {
	case "host", "domain", "any":
	default:
		bad("scope", "must be host, domain or any, got %q", c.Scope)
	}
	if !slices.Contains([]string{"DEBUG", "INFO", "WARN", "ERROR"}, c.LogLevel) {
		bad("logLevel", "must be DEBUG, INFO, WARN or ERROR, got %q", c.LogLevel)
	}
	if !slices.Contains([]string{"DEBUG", "INFO", "WARN"}, c.SystemLogLevel) {
		bad("systemLogLevel", "must be DEBUG, INFO or WARN, got %q", c.SystemLogLevel)
	}
	c.validateLimits(bad)
	c.validateTracing(bad)
	if c.BudgetUSD < 0 {
		bad("budgetUsd", "must be 0 (no budget) or more, got %v", c.BudgetUSD)
	}
	if strings.TrimSpace(c.UserAgent) == "" {
		bad("userAgent", "must not be empty")
	}
	checkFingerprint(c, bad)
	checkProxies(c, bad)
	checkSecretHeaders(c, bad)
	checkRecordStream(c, bad)
	if c.AllowNet != "" {
		for _, p := range strings.Split(c.AllowNet, ",") {
			if _, err := netip.ParsePrefix(strings.TrimSpace(p)); err != nil {
				bad("allowNet", "must be comma-separated CIDRs: %v", err)
			}
		}
	}
	c.validateRecrawl(bad)
	c.validateAlarms(bad)
	c.validateLifecycle(bad)
	for _, name := range c.pipelineFunctions() {
		c.validateFunction(name, bad)
	}
	if c.slowLane() {
		c.validateFunction(FnFetchSlow, bad)
	}
	return errors.Join(errs...)
}

// validateLimits reports the bad limits of a crawl: its depth, pages, patterns (and their size in
// each function's environment) and its rate per host.
func (c Config) validateLimits(bad func(key, format string, args ...any)) {
	if c.MaxDepth < 0 {
		bad("maxDepth", "must be 0 or more, got %d", c.MaxDepth)
	}
	if c.MaxPages < 1 {
		bad("maxPages", "must be 1 or more, got %d", c.MaxPages)
	}
	if c.MaxPagesPerHost < 0 {
		bad("maxPagesPerHost", "must be 0 (no limit) or more, got %d", c.MaxPagesPerHost)
	}
	for _, p := range []struct {
		key  string
		list []string
	}{{"include", c.Include}, {"exclude", c.Exclude}} {
		for i, e := range p.list {
			if strings.TrimSpace(e) == "" {
				bad(p.key, "pattern %d is empty", i+1)
			} else if _, err := regexp.Compile(e); err != nil {
				bad(p.key, "pattern %d %q is not a Go regexp: %v", i+1, e, err)
			}
		}
	}
	if n := envBytes(c); n > lambdaEnvLimit {
		bad("include", "and exclude make each function's environment up to %d bytes with the deploy-time names, over Lambda's limit of %d: "+
			"shorten the patterns or join several into one with |", n, lambdaEnvLimit)
	}
	if !(c.HostRPS > 0 && c.HostRPS <= 100) {
		bad("hostRps", "must be more than 0 and at most 100, got %v", c.HostRPS)
	}
}

// validateRecrawl reports the bad settings of how crawls start again, end and retry: the
// recrawl's prefix and schedule, the finish check, the receives of a message, the WARC index,
// and the tries of a failing URL.
func (c Config) validateRecrawl(bad func(key, format string, args ...any)) {
	if c.RecrawlPrefix == "" || !strings.HasSuffix(c.RecrawlPrefix, "/") || strings.HasPrefix(c.RecrawlPrefix, "/") {
		bad("recrawlPrefix", "must be a key prefix like \"seeds/\", got %q", c.RecrawlPrefix)
	}
	if m := rateExpr.FindStringSubmatch(c.ScheduleExpression); m != nil {
		if plural := strings.HasSuffix(m[2], "s"); (m[1] == "1") == plural {
			bad("scheduleExpression", "rate of 1 takes a singular unit and more than 1 a plural, got %q", c.ScheduleExpression)
		}
	} else if !cronExpr.MatchString(c.ScheduleExpression) {
		bad("scheduleExpression", "must be rate(N unit) or cron(6 fields), got %q", c.ScheduleExpression)
	}
	if c.FinishCheckSeconds < 1 || c.FinishCheckSeconds > 900 {
		bad("finishCheckSeconds", "must be 1 to 900 (an SQS message's longest delay), got %d", c.FinishCheckSeconds)
	}
	if c.FinishStallMinutes < 10 || c.FinishStallMinutes > 10080 {
		bad("finishStallMinutes", "must be 10 to 10080 (a week), got %d", c.FinishStallMinutes)
	}
	if c.MaxReceiveCount < 5 || c.MaxReceiveCount > 1000 {
		bad("maxReceiveCount", "must be 5 to 1000, got %d", c.MaxReceiveCount)
	}
	if c.WARCIndex != "crawl" && c.WARCIndex != "file" {
		bad("warcIndex", "must be crawl or file, got %q", c.WARCIndex)
	}
	if c.MaxTries < 1 || c.MaxTries > 20 {
		bad("maxTries", "must be 1 to 20 requests, got %d", c.MaxTries)
	}
	if c.RetryWaitSeconds < 1 || c.RetryWaitSeconds > 60 {
		bad("retryWaitSeconds", "must be 1 to 60 seconds, got %d", c.RetryWaitSeconds)
	}
	if c.RunURLs < 0 || c.RunURLs > maxRunURLs {
		bad("runUrls", "must be 0 to %d (0 or 1: no runs and no slow lane), got %d", maxRunURLs, c.RunURLs)
	}
	for _, p := range retryClassProblems(c.RetryClasses) {
		bad("retryClasses", "%s", p)
	}
}

// validateAlarms reports the bad settings of the logs and alarms: the logs' retention, the
// oldest message's alarm, and the email told about an alarm.
func (c Config) validateAlarms(bad func(key, format string, args ...any)) {
	if _, ok := logRetentions[c.LogRetentionDays]; !ok {
		bad("logRetentionDays", "must be a CloudWatch Logs retention (1, 3, 5, 7, 14, 30, 60, 90, ... 3653), got %d", c.LogRetentionDays)
	}
	if c.OldestMessageAlarmSeconds < 60 {
		bad("oldestMessageAlarmSeconds", "must be 60 or more, got %d", c.OldestMessageAlarmSeconds)
	}
	if c.ExtraAlarms && !c.Alarms {
		bad("extraAlarms", "is true but context \"alarms\" is false: the extra alarms come with the core ones, set alarms to true or extraAlarms to false")
	}
	if c.AlarmEmail != "" {
		if !emailAddr.MatchString(c.AlarmEmail) {
			bad("alarmEmail", "must be one email address like ops@example.com, got %q", c.AlarmEmail)
		}
		if !c.Alarms {
			bad("alarmEmail", "is set but context \"alarms\" is false, so there is no alarm to notify about: set alarms to true or leave alarmEmail empty")
		}
	}
}

// validateFunction reports the bad settings of the function name: its timeout, memory,
// concurrency, batches and batch concurrency.
func (c Config) validateFunction(name string, bad func(key, format string, args ...any)) {
	f := c.Function(name)
	// 6x the timeout is the visibility timeout, which SQS caps at 12 hours;
	// Lambda caps the timeout at 15 minutes.
	if f.TimeoutSeconds < 1 || f.TimeoutSeconds > 900 {
		bad(name+"TimeoutSeconds", "must be 1 to 900, got %d", f.TimeoutSeconds)
	}
	if f.MemoryMB < 128 || f.MemoryMB > 10240 {
		bad(name+"MemoryMB", "must be 128 to 10240, got %d", f.MemoryMB)
	}
	if f.MaxConcurrency < 2 || f.MaxConcurrency > 1000 {
		bad(name+"MaxConcurrency", "must be 2 to 1000 (the SQS event source limits), got %d", f.MaxConcurrency)
	}
	if f.BatchSize < 1 || f.BatchSize > maxBatchSize {
		bad(name+"BatchSize", "must be 1 to %d (the SQS event source limit on a standard queue), got %d", maxBatchSize, f.BatchSize)
	}
	if f.BatchWindowSeconds < 0 || f.BatchWindowSeconds > maxBatchWindowSecond {
		bad(name+"BatchWindowSeconds", "must be 0 to %d, got %d", maxBatchWindowSecond, f.BatchWindowSeconds)
	} else if f.BatchSize > maxUnwindowedBatch && f.BatchWindowSeconds < 1 {
		bad(name+"BatchWindowSeconds", "must be at least 1 when %sBatchSize is above %d (Lambda rejects a larger batch without a batching window), got %d",
			name, maxUnwindowedBatch, f.BatchWindowSeconds)
	}
	if f.BatchConcurrency < 1 || f.BatchConcurrency > 1000 {
		bad(name+"BatchConcurrency", "must be 1 to 1000, got %d", f.BatchConcurrency)
	}
}
