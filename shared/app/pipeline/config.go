package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/layout"

	"github.com/crawlstack/crawlstack/shared/crawl/cost"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/retry"
	"github.com/crawlstack/crawlstack/shared/crawl/scope"
	"github.com/crawlstack/crawlstack/shared/crawl/secretref"
	"github.com/crawlstack/crawlstack/shared/crawl/web/httpfetch"
	"github.com/crawlstack/crawlstack/shared/crawl/web/netguard"
	"github.com/crawlstack/crawlstack/shared/crawl/web/proxysecret"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// DefaultUserAgent is honest and identifiable: it names the crawler and where to learn about it.
const DefaultUserAgent = "crawlstack/0.1 (+https://github.com/crawlstack/crawlstack)"

// Config is the crawl's configuration, the same for the Lambda functions (from the environment)
// and for `crawl run` (from flags).
type Config struct {
	ScheduleQueue, FetchQueue, ParseQueue string
	// RecordStreamQueue, if set, is a queue that parse sends each page's record to as it stores
	// it (parser.StreamMessage; the stack's recordStreamQueueArn).
	RecordStreamQueue string
	// RenderQueue is the render step's queue (RENDER_QUEUE_URL): fetch sends the parse messages of
	// a crawl whose spec has a render section there. Empty: no render step (a stack deployed
	// without render=true), and such crawls' pages are parsed from their static HTML.
	RenderQueue string
	// SlowQueue is the slow lane's queue (FETCHSLOW_QUEUE_URL): schedule sends the runs of polite
	// hosts there (frontier.Config.SlowQueue), and the fetchslow function consumes it with the fetch
	// handler at less memory, sending a run's rest back to it. Empty: no lane, and runs go to fetch.
	SlowQueue string

	Scope           scope.Mode
	Include         []string
	Exclude         []string
	MaxDepth        int
	MaxPages        int
	MaxPagesPerHost int

	UserAgent       string
	HostRPS         float64
	HostConcurrency int
	// BatchConcurrency is how many records of one batch a handler works on at once.
	BatchConcurrency int
	// AdmitConcurrency is how many URLs of one Links message schedule admits at once (0:
	// frontier.DefaultAdmitConcurrency). crawl run raises it on the embedded backend, whose writes
	// made at once share a commit.
	AdmitConcurrency int
	// FetchInFlight is the most GETs the process has in flight at once, over all its fetch
	// batches (0: no bound beyond BatchConcurrency per batch). A Lambda function runs one batch at
	// a time and needs none; `crawl run` sets it to its concurrency and runs more fetch batches
	// than that at once, so that one batch's GETs go on while another stores its pages.
	FetchInFlight int
	AllowNets     []string
	Ports         []int
	Fingerprint   string
	// Proxies carry every fetch when set (httpfetch.Options.Proxies: their credentials are in
	// the URLs and never logged); ProxyRotation is httpfetch.RotatePerRequest or StickyPerHost.
	Proxies       []string
	ProxyRotation string
	// ProxiesSecret names where a deployed crawl's proxies are kept with their credentials:
	// "ssm:<parameter name>" or "secretsmanager:<secret name or ARN>" (package proxysecret). The
	// fetch function reads them at init and adds them to Proxies; the value is never logged.
	ProxiesSecret string
	// SecretHeaders are the parameter and secret name prefixes that crawl specs' secret headers
	// may name on a deployed stack, whose fetch function is granted those alone
	// (CRAWL_SECRET_HEADER_SSM_PREFIX, CRAWL_SECRET_HEADER_SECRETS_PREFIX; none: no spec may name one).
	SecretHeaders secretref.Allowed
	MaxBodyBytes  int64
	FetchTimeout  time.Duration
	// FetchMemoryMB is the memory of the fetch process, in MB: half of it bounds the bodies and
	// WARC records it holds at once (fetcher.MemoryBudgetFor; 0: no bound). On Lambda it is the
	// function's memory (AWS_LAMBDA_FUNCTION_MEMORY_SIZE); CRAWL_FETCH_MEMORY_MB overrides it.
	FetchMemoryMB int

	// MaxReceive must equal the queues' maxReceiveCount.
	MaxReceive int
	// MaxTries bounds the requests of a URL whose fetch fails with a class worth trying again
	// (http_5xx, http_429, timeout, connect, robots.txt down); RetryWait is the wait after its
	// first failure, each next one 4 times longer, at most 15 times RetryWait. A retry goes back
	// to the queue with its wait and burns no receive (retry.Tries).
	MaxTries  int
	RetryWait time.Duration
	// RetryClasses give some classes their own tries or first wait over MaxTries and RetryWait
	// (retry.ParseClasses: "timeout=2,http_5xx=6/10s"; nil: none). A crawl's spec may set its
	// own (its retry section), with no more tries than this policy gives any class.
	RetryClasses map[errclass.Class]retry.Curve

	// CircuitFailures is how many failed first requests in a row (no connection, a timeout, a
	// 5xx) open a host's circuit, whose URLs then wait without a request until a probe answers
	// (0: crawlstate.DefaultCircuitFailures; -1: never); CircuitProbe is the time between probes
	// (0: crawlstate.DefaultCircuitProbe).
	CircuitFailures int
	CircuitProbe    time.Duration

	RecrawlPrefix string

	// SlotLead is the fetch event source's batching window: fetch messages waiting for a politeness
	// slot come back that much earlier, so that the window does not make them late for it.
	SlotLead time.Duration

	// RunURLs is how many URLs of one polite host a fetch message carries at most, fetched one
	// after another (0 or 1, the default: no runs; frontier.DefaultRunURLs, 10, is the length
	// measured, which the stack's runUrls=10 sets with the slow lane, SlowQueue); a host gets runs when its requests are RunMinInterval apart or more (0:
	// frontier.DefaultRunMinInterval, a second).
	RunURLs        int
	RunMinInterval time.Duration

	// BudgetUSD stops a crawl from admitting URLs once its ledger costs this much (0: no budget).
	BudgetUSD float64
	// Prices overrides some of the prices the ledger is costed at (cost.Prices.Override: "sqs=0.40,...").
	Prices string

	// RunCheck is how long the handlers keep a crawl's run state (pause, resume, stop) once read
	// (0: crawlstate.DefaultRunCheck; below 0: they read it for every batch).
	RunCheck time.Duration
	// HoldCounters makes the handlers' shared store keep its counter increments for the process
	// to write on its own schedule (crawlstate.WithHeldCounters): crawl run sets it, and writes
	// them every 100 ms. A Lambda function must not: a frozen container would keep them.
	HoldCounters bool
	// LocalSecrets lets crawl specs name secret headers by env: and file: reference
	// (crawlspec.Bounds.LocalSecrets): crawl run sets it, where the handlers run beside the
	// variables and files. A Lambda function has neither.
	LocalSecrets bool
	// CostCheck is how often the store reads a crawl's ledger to check its budget (0:
	// crawlstate.DefaultCostCheck).
	CostCheck time.Duration
	// MetricSeries are the custom metric series the functions write while a crawl runs (0:
	// metrics off), which a budget counts for the crawl's time (crawlstate.WithMetricSeries): the
	// Lambda functions set it when they write metrics (awsports).
	MetricSeries int
	// PauseWait is how long a paused crawl's fetch messages wait in the queue between looks
	// (0: fetcher.DefaultPauseWait).
	PauseWait time.Duration

	// FinishEvery is the time between two drain checks of a crawl (package finish); 0 sends none:
	// `crawl run` sees the end of its queues itself. FinishQuiet is how long a crawl's counters
	// must stay unchanged before a check tallies its items again (0: finish.DefaultQuiet);
	// FinishStall how long they must stay unchanged with work left before the crawl is announced
	// stalled and its checks stop (0: finish.DefaultStallAfter).
	FinishEvery, FinishQuiet, FinishStall time.Duration

	// WARCIndex says where the CDXJ index of the WARC files is: IndexEachFile (beside each file,
	// as it is stored) or IndexPerCrawl (none beside the files: `crawl index` builds the crawl's
	// from them, a PUT fewer per fetch batch).
	WARCIndex string
}

// The places of the WARC files' CDXJ index (Config.WARCIndex).
const (
	IndexEachFile = "file"
	IndexPerCrawl = "crawl"
)

// SentUserAgent is the User-Agent the requests send: UserAgent, or the browser's own for
// httpfetch.UserAgentBrowser (Validate has checked that it agrees with the TLS fingerprint).
func (c Config) SentUserAgent() string {
	ua, err := httpfetch.UserAgentFor(c.UserAgent, c.Fingerprint)
	if err != nil {
		return c.UserAgent
	}
	return ua
}

// PriceTable is the prices a crawl's ledger is costed at: the list prices with c.Prices over them.
func (c Config) PriceTable() (cost.Prices, error) {
	return cost.DefaultPrices().Override(c.Prices)
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		ScheduleQueue: "schedule", FetchQueue: "fetch", ParseQueue: "parse",
		Scope: scope.Host, MaxDepth: 16, MaxPagesPerHost: 100_000,
		UserAgent: DefaultUserAgent, HostRPS: 1, HostConcurrency: 2, BatchConcurrency: 10,
		FetchTimeout: 30 * time.Second, MaxReceive: 5, MaxTries: 4, RetryWait: 2 * time.Second, RecrawlPrefix: layout.Seeds,
		WARCIndex: IndexEachFile,
	}
}

// Validate checks the configuration and says what is wrong, one line per problem.
func (c Config) Validate() error {
	var errs []error
	for _, check := range []func() []error{c.checkCrawl, c.checkIdentity, c.checkLimits, c.checkRetries} {
		errs = append(errs, check()...)
	}
	return errors.Join(errs...)
}

// checkCrawl checks the queues and what a crawl may admit: its scope, patterns and page bounds.
func (c Config) checkCrawl() []error {
	var errs []error
	if c.ScheduleQueue == "" || c.FetchQueue == "" || c.ParseQueue == "" {
		errs = append(errs, errors.New("the schedule, fetch and parse queues must all be set"))
	}
	if _, err := scope.ParseMode(string(c.Scope)); err != nil {
		errs = append(errs, err)
	}
	if _, err := scope.ParsePatterns(c.Include); err != nil {
		errs = append(errs, fmt.Errorf("include: %w", err))
	}
	if _, err := scope.ParsePatterns(c.Exclude); err != nil {
		errs = append(errs, fmt.Errorf("exclude: %w", err))
	}
	if c.MaxPages < 0 || c.MaxPagesPerHost < 0 {
		errs = append(errs, errors.New("max pages must be 0 (no limit) or more"))
	}
	return errs
}

// checkIdentity checks how the requests present themselves: the User-Agent, the TLS fingerprint
// and the proxies.
func (c Config) checkIdentity() []error {
	var errs []error
	if strings.TrimSpace(c.UserAgent) == "" {
		errs = append(errs, errors.New("the user agent must not be empty: crawlers say who they are"))
	}
	if !httpfetch.ValidFingerprint(c.Fingerprint) {
		errs = append(errs, fmt.Errorf("tls fingerprint %q: want %s, or none for Go's own", c.Fingerprint, httpfetch.FingerprintChrome))
	} else if _, err := httpfetch.UserAgentFor(c.UserAgent, c.Fingerprint); err != nil {
		errs = append(errs, err)
	}
	for _, p := range c.Proxies {
		if _, err := httpfetch.ParseProxy(p); err != nil {
			errs = append(errs, err) // its message holds no password
		}
	}
	if c.ProxiesSecret != "" {
		if _, err := proxysecret.ParseRef(c.ProxiesSecret); err != nil {
			errs = append(errs, err)
		}
		if c.Fingerprint == httpfetch.FingerprintChrome {
			errs = append(errs, errors.New("proxies and the chrome TLS fingerprint do not go together yet: use one or the other"))
		}
	}
	if r := c.ProxyRotation; r != "" && r != httpfetch.RotatePerRequest && r != httpfetch.StickyPerHost {
		errs = append(errs, fmt.Errorf("proxy rotation %q: want %s or %s", r, httpfetch.RotatePerRequest, httpfetch.StickyPerHost))
	}
	if len(c.Proxies) > 0 && c.Fingerprint == httpfetch.FingerprintChrome {
		errs = append(errs, errors.New("proxies and the chrome TLS fingerprint do not go together yet: use one or the other"))
	}
	return errs
}

// checkLimits checks the rates, concurrencies, addresses, sizes, budget and drain checks.
func (c Config) checkLimits() []error {
	var errs []error
	if c.HostRPS < 0 {
		errs = append(errs, fmt.Errorf("host rps %v: must be 0 (no limit) or more", c.HostRPS))
	}
	if c.HostConcurrency < 0 || c.BatchConcurrency < 1 || c.FetchInFlight < 0 || c.AdmitConcurrency < 0 {
		errs = append(errs, errors.New("host concurrency, fetches in flight and admit concurrency must be 0 or more, batch concurrency 1 or more"))
	}
	if _, err := netguard.ParseCIDRs(c.AllowNets); err != nil {
		errs = append(errs, fmt.Errorf("allow-net: %w", err))
	}
	if c.MaxBodyBytes < 0 || c.FetchTimeout < 0 || c.FetchMemoryMB < 0 {
		errs = append(errs, errors.New("max body bytes, fetch timeout and fetch memory must not be negative"))
	}
	if c.BudgetUSD < 0 {
		errs = append(errs, fmt.Errorf("budget $%v: must be 0 (no budget) or more", c.BudgetUSD))
	}
	if c.CostCheck < 0 {
		errs = append(errs, fmt.Errorf("cost check %v: must be 0 (the default, %v) or more", c.CostCheck, crawlstate.DefaultCostCheck))
	}
	if _, err := c.PriceTable(); err != nil {
		errs = append(errs, fmt.Errorf("prices: %w", err))
	}
	if c.FinishEvery < 0 || c.FinishEvery > queue.MaxDelay || c.FinishQuiet < 0 || c.FinishStall < 0 {
		errs = append(errs, fmt.Errorf("finish checks every %s, quiet %s, stall %s: want 0 to %s between checks, and a quiet and a stall time not below 0",
			c.FinishEvery, c.FinishQuiet, c.FinishStall, queue.MaxDelay))
	}
	return errs
}

// FromEnv reads the Lambda functions' configuration. Unset variables keep their defaults; set but
// malformed ones are errors that name the variable.
func FromEnv(getenv func(string) string) (Config, error) {
	c := DefaultConfig()
	r := &envReader{getenv: getenv}
	r.readCrawl(&c)
	r.readLimits(&c)
	r.readFetching(&c)
	if len(r.errs) > 0 {
		return c, errors.Join(r.errs...)
	}
	return c, c.Validate()
}

// envReader reads variables into a Config, and keeps an error for each one set but malformed.
type envReader struct {
	getenv func(string) string
	errs   []error
}

// value is the variable's value, trimmed ("": unset).
func (r *envReader) value(name string) string { return strings.TrimSpace(r.getenv(name)) }

func (r *envReader) str(name string, dst *string) {
	if v := r.value(name); v != "" {
		*dst = v
	}
}

func (r *envReader) num(name string, dst *int) {
	if v := r.value(name); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			r.errs = append(r.errs, fmt.Errorf("%s=%q: not a whole number", name, v))
			return
		}
		*dst = n
	}
}

func (r *envReader) float(name string, dst *float64) {
	if v := r.value(name); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			r.errs = append(r.errs, fmt.Errorf("%s=%q: not a number", name, v))
			return
		}
		*dst = f
	}
}

func (r *envReader) duration(name string, dst *time.Duration) {
	if v := r.value(name); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			r.errs = append(r.errs, fmt.Errorf("%s=%q: not a duration such as 2s", name, v))
			return
		}
		*dst = d
	}
}

// list reads a comma-separated list.
func (r *envReader) list(name string, dst *[]string) {
	if v := r.value(name); v != "" {
		*dst = strings.Split(v, ",")
		for i := range *dst {
			(*dst)[i] = strings.TrimSpace((*dst)[i])
		}
	}
}

// patterns reads a list of patterns (ParsePatternList).
func (r *envReader) patterns(name string, dst *[]string) {
	ps, err := ParsePatternList(r.getenv(name))
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s: %w", name, err))
		return
	}
	if ps != nil {
		*dst = ps
	}
}

// readCrawl reads the queues and what a crawl admits.
func (r *envReader) readCrawl(c *Config) {
	r.str("SCHEDULE_QUEUE_URL", &c.ScheduleQueue)
	r.str("FETCH_QUEUE_URL", &c.FetchQueue)
	r.str("PARSE_QUEUE_URL", &c.ParseQueue)
	r.str("CRAWL_RECORD_STREAM_QUEUE_URL", &c.RecordStreamQueue)
	r.str("RENDER_QUEUE_URL", &c.RenderQueue)
	r.str("FETCHSLOW_QUEUE_URL", &c.SlowQueue)
	var mode string
	r.str("CRAWL_SCOPE", &mode)
	if mode != "" {
		c.Scope = scope.Mode(mode)
	}
	r.patterns("CRAWL_INCLUDE", &c.Include)
	r.patterns("CRAWL_EXCLUDE", &c.Exclude)
	r.num("CRAWL_MAX_DEPTH", &c.MaxDepth)
	r.num("CRAWL_MAX_PAGES", &c.MaxPages)
	r.num("CRAWL_MAX_PAGES_PER_HOST", &c.MaxPagesPerHost)
	r.str("CRAWL_USER_AGENT", &c.UserAgent)
}

// readLimits reads the rates, budget, retries, circuits and drain checks.
func (r *envReader) readLimits(c *Config) {
	r.float("CRAWL_HOST_RPS", &c.HostRPS)
	r.num("CRAWL_HOST_CONCURRENCY", &c.HostConcurrency)
	r.float("CRAWL_BUDGET_USD", &c.BudgetUSD)
	r.str("CRAWL_PRICES", &c.Prices)
	r.num("CRAWL_MAX_TRIES", &c.MaxTries)
	r.duration("CRAWL_RETRY_WAIT", &c.RetryWait) // Validate refuses 0
	if classes, err := retry.ParseClasses(r.getenv("CRAWL_RETRY_CLASSES")); err != nil {
		r.errs = append(r.errs, fmt.Errorf("CRAWL_RETRY_CLASSES: %w", err))
	} else if classes != nil {
		c.RetryClasses = classes
	}
	r.num("CRAWL_CIRCUIT_FAILURES", &c.CircuitFailures)
	r.duration("CRAWL_CIRCUIT_PROBE", &c.CircuitProbe)
	r.duration("CRAWL_SLOT_LEAD", &c.SlotLead)
	r.num("CRAWL_RUN_URLS", &c.RunURLs)
	r.duration("CRAWL_RUN_MIN_INTERVAL", &c.RunMinInterval)
	r.str("CRAWL_WARC_INDEX", &c.WARCIndex)
	r.duration("CRAWL_FINISH_EVERY", &c.FinishEvery)
	r.duration("CRAWL_FINISH_QUIET", &c.FinishQuiet)
	r.duration("CRAWL_FINISH_STALL", &c.FinishStall)
	// The stack sets it per function: the GETs a fetch batch has in flight, the pages a parse batch
	// parses at once.
	r.num("CRAWL_BATCH_CONCURRENCY", &c.BatchConcurrency)
}

// readFetching reads how fetch reaches the web: addresses, proxies, ports, sizes and timeouts.
func (r *envReader) readFetching(c *Config) {
	r.list("CRAWL_ALLOW_NET", &c.AllowNets)
	r.list("CRAWL_PROXIES", &c.Proxies)
	r.str("CRAWL_PROXY_ROTATION", &c.ProxyRotation)
	r.str("CRAWL_PROXIES_SECRET", &c.ProxiesSecret)
	r.str("CRAWL_SECRET_HEADER_SSM_PREFIX", &c.SecretHeaders.SSM)
	r.str("CRAWL_SECRET_HEADER_SECRETS_PREFIX", &c.SecretHeaders.SecretsManager)
	if v := r.value("CRAWL_ALLOW_PORTS"); v != "" {
		c.Ports = []int{80, 443}
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 || n > 65535 {
				r.errs = append(r.errs, fmt.Errorf("CRAWL_ALLOW_PORTS=%q: %q is not a port", v, f))
				continue
			}
			c.Ports = append(c.Ports, n)
		}
	}
	r.num("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", &c.FetchMemoryMB)
	r.num("CRAWL_FETCH_MEMORY_MB", &c.FetchMemoryMB)
	if v := r.value("CRAWL_MAX_BODY_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			r.errs = append(r.errs, fmt.Errorf("CRAWL_MAX_BODY_BYTES=%q: not a positive whole number", v))
		}
		c.MaxBodyBytes = n
	}
	if v := r.value("CRAWL_FETCH_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			r.errs = append(r.errs, fmt.Errorf("CRAWL_FETCH_TIMEOUT=%q: not a positive duration such as 30s", v))
		}
		c.FetchTimeout = d
	}
	r.str("CRAWL_TLS_FINGERPRINT", &c.Fingerprint)
	r.num("CRAWL_MAX_RECEIVE", &c.MaxReceive)
	r.str("CRAWL_RECRAWL_PREFIX", &c.RecrawlPrefix)
}

// ParsePatternList reads CRAWL_INCLUDE or CRAWL_EXCLUDE, for the functions and for the crawl
// command. A regexp may contain commas, so the list is not comma-separated: a value that starts with "[" is a JSON array of strings (what the CDK
// stack writes), anything else one pattern per line (blank lines ignored), so one regexp is
// written as it is (one that itself starts with "[" goes in a JSON array). Each pattern must
// compile. An empty value gives nil: the default stays.
func ParsePatternList(v string) ([]string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	var out []string
	if strings.HasPrefix(v, "[") {
		if err := json.Unmarshal([]byte(v), &out); err != nil {
			return nil, fmt.Errorf("not a JSON array of strings: %w", err)
		}
		for i, p := range out {
			if strings.TrimSpace(p) == "" {
				return nil, fmt.Errorf("pattern %d is empty", i+1)
			}
		}
	} else {
		for _, line := range strings.Split(v, "\n") {
			if line = strings.TrimSpace(line); line != "" {
				out = append(out, line)
			}
		}
	}
	if _, err := scope.ParsePatterns(out); err != nil {
		return nil, err
	}
	return out, nil
}
