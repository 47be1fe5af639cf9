package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/crawlstack/crawlstack/shared/app/pipeline"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/retry"
	"github.com/crawlstack/crawlstack/shared/crawl/scope"
	"github.com/crawlstack/crawlstack/shared/crawl/web/httpfetch"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// The flags of `crawl run` (and of `crawl demo` after "--"), and the pipeline configuration they
// make.

// RunOptions are the flags of `crawl run`.
type RunOptions struct {
	State   string
	Backend string
	// Stack is a deployed stack whose outputs name the table, bucket and queues (the commands
	// about crawls: --stack, CRAWL_STACK); it implies the aws backend.
	Stack           string
	Concurrency     int
	HostConcurrency int
	HostRPS         float64
	Scope           string
	MaxDepth        int
	MaxPages        int
	MaxPagesPerHost int
	UserAgent       string
	AllowNet        []string
	AllowPorts      []int
	MaxBodyBytes    int64
	MemoryMB        int
	FetchTimeout    time.Duration
	Include         []string
	Exclude         []string
	Fingerprint     string
	Proxies         []string
	ProxyRotation   string
	JSON            bool
	Visibility      time.Duration
	MaxReceive      int
	MaxTries        int
	RetryWait       time.Duration
	// RetryClasses give some error classes their own tries or wait (retry.ParseClasses).
	RetryClasses    string
	CircuitFailures int
	CircuitProbe    time.Duration
	Quiet           bool
	StopGrace       time.Duration
	Fresh           bool
	Name            string
	SeedFile        string
	BudgetUSD       float64
	Prices          string
	OTel            string
	// Chromium is the Chromium binary that renders the pages of crawls whose spec has a render
	// section (--chromium, CRAWL_CHROMIUM; "": looked for on PATH).
	Chromium string
	Log      LogFlags
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// runFlags defines the flags of `crawl run` (and of `crawl demo` after "--", without the
// seed file's) on a new flag set that fills o. Their usage strings are the flags' one
// documentation: `crawl run --help` prints them, and the flag table of docs/cli.md is generated
// from them (TestCLIDocFlagTable).
func runFlags(name string, o *RunOptions, wantSeed bool) *flag.FlagSet {
	d := pipeline.DefaultConfig()
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.StringVar(&o.State, "state", "crawl-state", "state directory: queues and table (state.db), pages and records (blobs/); embedded backend only (refused with --backend aws)")
	fs.StringVar(&o.Backend, "backend", "embedded", "embedded (no AWS), or aws: the same local runner on SQS, DynamoDB and S3, as AWS_ENDPOINT_URL* and CRAWL_TABLE, CRAWL_BUCKET, CRAWL_QUEUE_PREFIX say (docs/localstack.md)")
	fs.IntVar(&o.Concurrency, "concurrency", 32, "fetches in flight at once")
	fs.IntVar(&o.HostConcurrency, "host-concurrency", d.HostConcurrency, "fetches in flight per host (0: no bound)")
	fs.Float64Var(&o.HostRPS, "host-rps", d.HostRPS, "requests per second per host, shared by all workers; 0 lifts it for a site you own (robots.txt Crawl-delay still applies)")
	fs.StringVar(&o.Scope, "scope", string(d.Scope), "which links are followed: the seed's host, its registrable domain, or any")
	fs.IntVar(&o.MaxDepth, "max-depth", d.MaxDepth, "link hops from a seed (0: the seeds only; -1: no limit)")
	fs.IntVar(&o.MaxPages, "max-pages", 0, "pages the crawl fetches, never more (0: no limit): a URL that ends skipped (robots.txt, content type, size) gives its page back, one that fails keeps it; the links over it end skipped with class budget (docs/safety.md)")
	fs.IntVar(&o.MaxPagesPerHost, "max-pages-per-host", d.MaxPagesPerHost, "URLs admitted per host, a spider-trap guard (0: no limit)")
	fs.StringVar(&o.UserAgent, "user-agent", d.UserAgent, "the User-Agent header; its product token selects the robots.txt group (browser: the User-Agent of --tls-fingerprint's browser)")
	fs.Var((*listFlag)(&o.AllowNet), "allow-net", "a non-public range (CIDR, or one IP) that may be crawled: non-public addresses are refused otherwise; repeatable")
	fs.Func("allow-port", "another port that public addresses may be fetched on, besides 80 and 443; repeatable", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("port %q: want 1 to 65535", v)
		}
		o.AllowPorts = append(o.AllowPorts, n)
		return nil
	})
	fs.Int64Var(&o.MaxBodyBytes, "max-body-bytes", 10<<20, "body bytes read from the wire per page (over it: too_large)")
	fs.IntVar(&o.MemoryMB, "fetch-memory-mb", 2048, "memory for fetching, in MB: half of it bounds the page bodies and WARC records held at once (0: no bound)")
	fs.DurationVar(&o.FetchTimeout, "fetch-timeout", d.FetchTimeout, "time for one fetch, redirects and body included")
	fs.Var((*listFlag)(&o.Include), "include", "a regexp a URL must match (repeatable: any one suffices)")
	fs.Var((*listFlag)(&o.Exclude), "exclude", "a regexp a URL must not match (repeatable)")
	fs.StringVar(&o.Fingerprint, "tls-fingerprint", "", "chrome: an opt-in browser TLS ClientHello (utls, Chrome 133's; HTTP/2 when the server chooses it), for sites that refuse Go's own")
	fs.Var((*listFlag)(&o.Proxies), "proxy", "a proxy that carries the fetches: http://, https:// or socks5://[user:password@]host:port (repeatable; the password is never shown; not with --tls-fingerprint)")
	fs.StringVar(&o.ProxyRotation, "proxy-rotation", httpfetch.RotatePerRequest, "request: the proxies take turns; host: all of a host's requests through one proxy while it is up")
	fs.BoolVar(&o.JSON, "json", false, "the summary as one JSON document on stdout (for jq and scripts), everything else on stderr")
	fs.BoolVar(&o.Quiet, "quiet", false, "no live progress line, even on a terminal")
	fs.DurationVar(&o.StopGrace, "stop-grace", 30*time.Second, "after Ctrl-C (or SIGTERM), how long the requests in flight may take to finish and be stored, so that no page is fetched twice; a second Ctrl-C stops at once (0: at once)")
	fs.DurationVar(&o.Visibility, "visibility", 30*time.Second, "visibility timeout of the queues the run creates: how long a received message stays hidden")
	fs.IntVar(&o.MaxReceive, "max-receive", d.MaxReceive, "receives before a message moves to its dead-letter queue")
	fs.IntVar(&o.MaxTries, "max-tries", d.MaxTries, "requests of a URL that keeps failing with http_5xx, http_429, timeout or connect, or whose robots.txt is down (timeout and robots_unavailable: at most 2 unless --retry-classes names them); then it ends failed with that class (skipped, robots_unavailable, for robots.txt)")
	fs.DurationVar(&o.RetryWait, "retry-wait", d.RetryWait, "wait after a URL's first failed request; each next is 4 times longer, at most 15 times this")
	fs.StringVar(&o.RetryClasses, "retry-classes", "", "tries and first wait of some error classes over --max-tries and --retry-wait: CLASS=TRIES[/WAIT],... of connect, timeout, http_429, http_5xx, robots_unavailable, such as timeout=2,http_5xx=6/10s")
	fs.IntVar(&o.CircuitFailures, "circuit-failures", crawlstate.DefaultCircuitFailures, "failed first requests of a host in a row (no connection, timeout, 5xx) that open its circuit: its URLs wait, without a request, until a probe answers (-1: no circuit)")
	fs.DurationVar(&o.CircuitProbe, "circuit-probe", crawlstate.DefaultCircuitProbe, "time between the probes of a host whose circuit is open: one URL is sent, and its answer closes the circuit")
	o.Log.register(fs, "warn")
	fs.StringVar(&o.Chromium, "chromium", "", "the Chromium binary that renders the pages of crawls whose spec has a render: section (docs/render.md; unset: looked for on PATH). Without one, those pages are parsed from their static HTML, each record saying render/no-browser")
	fs.StringVar(&o.OTel, "otel", "", "an OTLP/HTTP endpoint (http://localhost:4318) that the crawl's traces and metrics go to; the OTEL_EXPORTER_OTLP_* variables work too (docs/operating.md)")
	if wantSeed {
		fs.StringVar(&o.Name, "name", "", "name the crawl: runs with the same name go on with the same crawl, whatever the seed file holds (letters, digits, '.', '_', '-'; at most 40)")
		fs.BoolVar(&o.Fresh, "fresh", false, "start the seed file's crawl again when it has ended, as an incremental recrawl of it (docs/recrawl.md; while it is unfinished, a run resumes it)")
	}
	fs.Float64Var(&o.BudgetUSD, "budget-usd", 0, "--backend aws only: stop admitting URLs once the crawl's metered bill, with what it has admitted costed at its average so far, reaches this many dollars; the crawl drains and its summary says budget (docs/cost.md; 0: none)")
	fs.StringVar(&o.Prices, "prices", "", "the prices the bill is costed at, over us-east-1 list prices: sqs=0.40,ddb_write=0.625,... (docs/cost.md)")
	return fs
}

// runHelp is the help of `crawl run`.
var runHelp = cmdHelp{
	usage: "crawl run [flags] [SEEDFILE]",
	about: "Crawl the URLs of SEEDFILE (one a line; blank lines and # comments are ignored) on the embedded\n" +
		"backend, in the state directory: run the same command again to resume. Without SEEDFILE, a run\n" +
		"goes on with what the state directory holds: its unfinished crawls and queued messages (after a\n" +
		"crawl redrive, say).",
	examples: `crawl run seeds.txt
crawl run --state my-crawl --scope domain --max-pages 5000 seeds.txt
crawl run --state my-crawl                 # go on with what my-crawl holds
crawl run --allow-net 127.0.0.0/8 --host-rps 0 local-seeds.txt   # a site on your own machine
crawl run --json seeds.txt | jq .fetched`,
}

// parseRunFlags parses `crawl run` arguments.
func parseRunFlags(name string, args []string, wantSeed bool) (RunOptions, error) {
	o := RunOptions{}
	fs := runFlags(name, &o, wantSeed)
	h := runHelp
	if !wantSeed {
		h = demoHelp
	}
	if err := parseFlags(fs, args, h); err != nil {
		return o, err
	}
	if wantSeed {
		if fs.NArg() > 1 {
			return o, fmt.Errorf("want one SEEDFILE, got %d arguments%s", fs.NArg(), quotedArgs(fs.Args()))
		}
		if o.SeedFile = fs.Arg(0); o.SeedFile == "" && (o.Backend != "embedded" || o.Name != "" || o.Fresh) {
			return o, errors.New("want a SEEDFILE (only an embedded run without --name or --fresh goes on with its state directory alone)")
		}
	} else if fs.NArg() != 0 {
		return o, fmt.Errorf("unexpected arguments %q (run's flags go after --)", fs.Args())
	}
	if o.Name != "" && !validName(o.Name) {
		return o, fmt.Errorf("--name %q: use letters, digits, '.', '_' and '-', at most 40 of them", o.Name)
	}
	if err := checkRunFlags(o); err != nil {
		return o, err
	}
	if o.Backend != "embedded" && o.Backend != "aws" {
		return o, fmt.Errorf("--backend %q: want embedded or aws", o.Backend)
	}
	if _, err := o.Log.Logger(io.Discard); err != nil {
		return o, err
	}
	if o.BudgetUSD != 0 && o.Backend != "aws" {
		return o, errors.New("--budget-usd meters what a crawl costs on AWS, and the embedded backend bills nothing: use it with --backend aws")
	}
	return o, stateOnlyEmbedded(fs, o.Backend)
}

// validName is whether name may name a crawl (--name).
func validName(name string) bool {
	if len(name) == 0 || len(name) > 40 {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// embeddedAdmitConcurrency is how many URLs of a Links message schedule admits at once on the
// embedded backend, against frontier.DefaultAdmitConcurrency's 8 elsewhere: the SQLite writer
// commits the writes made at once together, so a message of a few hundred new links (a crawl's
// first pages) is admitted in fewer commits. At the start of a crawl of a site answering in 200 ms,
// its first 1.2 s kept 17.9 fetches in flight on average with 32, against 17.3 to 17.8 with 8
// (medians of 6 and 8 alternated runs; docs/bench-history.md, round thirteen).
const embeddedAdmitConcurrency = 32

// config turns the flags into the pipeline's configuration.
func (o RunOptions) config(r Resources) pipeline.Config {
	c := pipeline.DefaultConfig()
	c.ScheduleQueue, c.FetchQueue, c.ParseQueue, c.RenderQueue = r.Schedule, r.Fetch, r.Parse, r.Render
	c.SlowQueue = r.FetchSlow
	c.Scope = scope.Mode(o.Scope)
	c.Include, c.Exclude = o.Include, o.Exclude
	c.MaxDepth, c.MaxPages, c.MaxPagesPerHost = o.MaxDepth, o.MaxPages, o.MaxPagesPerHost
	c.UserAgent, c.HostRPS, c.HostConcurrency = o.UserAgent, o.HostRPS, o.HostConcurrency
	c.AllowNets, c.Fingerprint, c.MaxReceive = o.AllowNet, o.Fingerprint, o.MaxReceive
	c.MaxTries, c.RetryWait = o.MaxTries, o.RetryWait
	c.RetryClasses, _ = retry.ParseClasses(o.RetryClasses) // checkRetryFlags refused a bad one
	c.LocalSecrets = true                                  // the handlers run here, beside the variables and files a spec may name
	c.CircuitFailures, c.CircuitProbe = o.CircuitFailures, o.CircuitProbe
	c.Proxies, c.ProxyRotation = o.Proxies, o.ProxyRotation
	if len(o.AllowPorts) > 0 {
		c.Ports = append([]int{80, 443}, o.AllowPorts...)
	}
	c.MaxBodyBytes, c.FetchTimeout, c.FetchMemoryMB = o.MaxBodyBytes, o.FetchTimeout, o.MemoryMB
	c.BudgetUSD, c.Prices = o.BudgetUSD, o.Prices
	// A paused crawl's messages come back every few seconds: a resume shows at once, for a
	// receive and a send per message each time (none billed on the embedded backend).
	c.PauseWait = runPauseWait
	pollers := (o.Concurrency + queue.MaxBatch - 1) / queue.MaxBatch
	c.BatchConcurrency = (o.Concurrency + pollers - 1) / pollers
	c.FetchInFlight = o.Concurrency // NewRunner runs more fetch batches than that at once
	if o.Backend == "embedded" {
		c.AdmitConcurrency = embeddedAdmitConcurrency
	}
	return c
}
