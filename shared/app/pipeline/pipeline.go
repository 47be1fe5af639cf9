// Package pipeline wires the three handlers (schedule, fetch, parse) to the queue, table and blob
// ports from one Config. The Lambda mains and the local runner both build their handlers here, so
// the code that runs on a laptop is the code that runs in Lambda.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/finish"
	"github.com/crawlstack/crawlstack/shared/crawl/frontier"
	"github.com/crawlstack/crawlstack/shared/crawl/optout"
	"github.com/crawlstack/crawlstack/shared/crawl/safelog"
	"github.com/crawlstack/crawlstack/shared/crawl/scope"
	"github.com/crawlstack/crawlstack/shared/crawl/secretref"
	"github.com/crawlstack/crawlstack/shared/crawl/specstore"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/crawl/web/httpfetch"
	"github.com/crawlstack/crawlstack/shared/crawl/web/netguard"
	"github.com/crawlstack/crawlstack/shared/crawl/web/robots"
	"github.com/crawlstack/crawlstack/shared/handler/fetcher"
	"github.com/crawlstack/crawlstack/shared/handler/parser"
	"github.com/crawlstack/crawlstack/shared/handler/quarantine"
	"github.com/crawlstack/crawlstack/shared/handler/renderer"
	"github.com/crawlstack/crawlstack/shared/handler/scheduler"
	"github.com/crawlstack/crawlstack/shared/handler/sqsbatch"
	"github.com/crawlstack/crawlstack/shared/local/handoff"
	"github.com/crawlstack/crawlstack/shared/observe/telemetry"
	"github.com/crawlstack/crawlstack/shared/port/blob"
	"github.com/crawlstack/crawlstack/shared/port/queue"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// Ports are the backends, AWS or embedded.
type Ports struct {
	Queue queue.Sender
	// TopUp, if set, is the slow lane's own queue, from which a fetchslow invocation that its runs
	// keep alive takes more messages meanwhile (fetcher.Deps.TopUp): the queue's receiver where the
	// handler runs on its own queue's batches (Lambda, and crawl run's mappings). nil: no top-up.
	TopUp fetcher.Receiver
	Table table.Table
	Blobs blob.Store
	// Handoff, if set, passes each stored page from fetch to parse in memory, so that parse need
	// not read it back. Set it only where both handlers run in one process (crawl run); in Lambda
	// they never do.
	Handoff *handoff.Pages
	// Events, if set, is where a crawl's end is announced (package finish): with
	// Config.FinishEvery, schedule runs each crawl's drain checks, and Handlers.Finish announces
	// the end of a crawl that its caller saw drain.
	Events finish.Publisher
	// Refusals, if set, is told of each seed file that starts no crawl (a spec with errors, a file
	// over the size limit, a list with no good URL), after its seed report is written.
	Refusals scheduler.Refusals
	// Fetching, if set, is fetch's HTTP client and robots.txt cache, made by NewFetching from the
	// same Config before the other ports (crawl run warms the cache while it opens its state);
	// nil: New makes them.
	Fetching *Fetching
	// Browser renders the pages of crawls whose spec has a render section (the render handler,
	// shared/handler/renderer). Nil: no browser, and those pages are parsed from their static
	// HTML, each saying render/no-browser.
	Browser renderer.Browser
	// Secrets, if set, reads the values of the secret headers that crawl specs name by reference
	// (secretref), for fetch: set it wherever fetch runs. Nil leaves them unread, which only a
	// program that sends no request may do.
	Secrets secretref.Resolver
}

// Fetching is fetch's side of the web: its address guard, HTTP client and robots.txt cache.
type Fetching struct {
	guard  *netguard.Guard
	client *httpfetch.Client
	traced telemetry.Fetches // a span per outbound fetch, robots.txt too
	robots *robots.Cache
}

// NewFetching makes fetch's address guard, HTTP client and robots.txt cache from cfg, as New
// does. Close it, or the Handlers it is given to.
func NewFetching(cfg Config) (*Fetching, error) {
	nets, err := netguard.ParseCIDRs(cfg.AllowNets)
	if err != nil {
		return nil, fmt.Errorf("allow-net: %w", err)
	}
	guard := netguard.New(nets, cfg.Ports)
	client, err := httpfetch.New(httpfetch.Options{UserAgent: cfg.SentUserAgent(), Guard: guard,
		MaxBodyBytes: cfg.MaxBodyBytes, TotalTimeout: cfg.FetchTimeout, Fingerprint: cfg.Fingerprint,
		Proxies: cfg.Proxies, ProxyRotation: cfg.ProxyRotation,
		MaxIdleConnsPerHost: idleConnsPerHost(cfg.HostConcurrency), MaxInFlight: cfg.FetchInFlight})
	if err != nil {
		return nil, fmt.Errorf("http client: %w", err)
	}
	traced := telemetry.Fetches{Next: client}
	return &Fetching{guard: guard, client: client, traced: traced, robots: robots.New(traced, cfg.SentUserAgent(), 24*time.Hour)}, nil
}

// WarmRobots starts fetching the robots.txt that decides each of urls, once per origin (scheme,
// host and port), and returns without waiting: fetch's first check of each origin then finds its
// rules, or joins the fetch in flight. The files are fetched as fetch would fetch them for a crawl
// with the Config's own settings (User-Agent, headers, TLS fingerprint), through the same guard; a
// URL that is not an http(s) URL with a host is passed over.
func (f *Fetching) WarmRobots(ctx context.Context, urls []string) {
	for _, raw := range urls {
		if u, err := urlnorm.Normalize(raw); err == nil {
			_ = f.robots.Prefetch(ctx, u) // fails only for a URL Check refuses too
		}
	}
}

// Close releases the HTTP client's connections.
func (f *Fetching) Close() { f.client.Close() }

// Handlers are the three wired handlers and the state they share.
type Handlers struct {
	Schedule *scheduler.Handler
	Fetch    *fetcher.Handler
	// FetchSlow is the slow lane's fetch handler (nil unless NewOnly was asked for it): the fetch
	// handler on the slow lane's queue, to which it sends what it re-queues.
	FetchSlow *fetcher.Handler
	Parse     *parser.Handler
	// Render is the render step (nil unless NewOnly was asked for it).
	Render *renderer.Handler
	State  *crawlstate.Store
	// Frontier is schedule's frontier (nil without schedule): crawl run makes it forget the URLs
	// it sends again (frontier.Forget).
	Frontier *frontier.Frontier
	// HostRPS is the crawl's per-host rate (0: none), for a runner that sizes its fetch batches
	// by it.
	HostRPS float64
	// Finish announces crawls' ends, when Ports.Events is set (nil otherwise).
	Finish *finish.Checker
	http   *httpfetch.Client
	extra  []*httpfetch.Client // the render step's own, beside fetch's
}

// Close releases the HTTP clients' connections.
func (h *Handlers) Close() {
	if h.http != nil {
		h.http.Close()
	}
	for _, c := range h.extra {
		c.Close()
	}
}

// The handlers by name, for NewOnly.
const (
	Schedule = "schedule"
	Fetch    = "fetch"
	Parse    = "parse"
	// Render is the render step between fetch and parse, for crawls whose spec renders: New does
	// not build it; NewOnly does when asked.
	Render = "render"
	// FetchSlow is the slow lane (Config.SlowQueue): the fetch handler for the runs of polite
	// hosts, in a function of less memory. New does not build it; NewOnly does when asked.
	FetchSlow = "fetchslow"
)

// New validates cfg and builds the three handlers.
func New(cfg Config, p Ports, log *slog.Logger) (*Handlers, error) {
	return NewOnly(cfg, p, log, Schedule, Fetch, Parse)
}

// NewOnly validates cfg and builds the named handlers alone; the others are nil. A Lambda function
// runs one handler, and builds no other in its init: schedule no HTTP client or robots cache,
// fetch and parse no frontier (whose Bloom filter takes about 2.4 MB).
func NewOnly(cfg Config, p Ports, log *slog.Logger, names ...string) (*Handlers, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	w, err := newWiring(cfg, p, log)
	if err != nil {
		return nil, err
	}
	h := &Handlers{State: w.state, HostRPS: cfg.HostRPS, Finish: w.finish}
	for _, name := range names {
		switch name {
		case Schedule:
			h.Frontier, h.Schedule, err = w.schedule()
		case Fetch:
			var c *httpfetch.Client
			h.Fetch, c, err = w.fetch(Fetch)
			h.keep(c)
		case FetchSlow:
			if cfg.SlowQueue == "" {
				err = errors.New("the slow lane's fetch handler needs its queue: set FETCHSLOW_QUEUE_URL")
				break
			}
			var c *httpfetch.Client
			h.FetchSlow, c, err = w.fetch(FetchSlow)
			h.keep(c)
		case Parse:
			h.Parse = w.parse()
		case Render:
			h.Render, err = w.render(h)
		default:
			err = fmt.Errorf("no handler is called %q", name)
		}
		if err != nil {
			h.Close() // the HTTP client of a fetch built before
			return nil, err
		}
	}
	return h, nil
}

// wiring is what the handlers share: the ports, the crawl's scope rules, its state, each crawl's
// settings and the drain checks.
type wiring struct {
	cfg    Config
	p      Ports
	log    *slog.Logger
	rules  scope.Rules
	state  *crawlstate.Store
	crawls *specstore.Store
	finish *finish.Checker // nil without Ports.Events
}

// newWiring makes what the handlers share from a validated cfg.
func newWiring(cfg Config, p Ports, log *slog.Logger) (*wiring, error) {
	if log == nil {
		log = slog.Default()
	}
	log = safelog.Wrap(log) // strings from the web are cut before they reach a log line
	rules, err := crawlRules(cfg)
	if err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	w := &wiring{cfg: cfg, p: p, log: log, rules: rules, state: newState(cfg, p.Table)}
	// Each crawl's settings: the stack's, with its spec's over them (read once per crawl).
	w.crawls = specstore.New(p.Blobs, crawlspec.Crawl{Rules: rules, MaxPages: cfg.MaxPages, MaxPagesPerHost: cfg.MaxPagesPerHost,
		HostRPS: cfg.HostRPS, UserAgent: cfg.UserAgent, Fingerprint: cfg.Fingerprint, Retry: cfg.RetryPolicy()})
	if p.Secrets != nil {
		w.crawls.WithSecrets(p.Secrets)
	}
	// Every message sent carries the trace context of its send (a no-op without telemetry).
	w.p.Queue = telemetry.Sender{Next: p.Queue}
	if p.Events != nil {
		if w.finish, err = w.newFinish(); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// crawlRules are the stack's scope rules, the base of every crawl's.
func crawlRules(cfg Config) (scope.Rules, error) {
	rules := scope.DefaultRules()
	rules.Mode = cfg.Scope
	rules.MaxDepth = cfg.MaxDepth
	var err error
	if rules.Include, err = scope.ParsePatterns(cfg.Include); err != nil {
		return scope.Rules{}, fmt.Errorf("include patterns: %w", err)
	}
	if rules.Exclude, err = scope.ParsePatterns(cfg.Exclude); err != nil {
		return scope.Rules{}, fmt.Errorf("exclude patterns: %w", err)
	}
	return rules, nil
}

// newState is the crawl state that the handlers share.
func newState(cfg Config, t table.Table) *crawlstate.Store {
	counters := crawlstate.WithBufferedCounters() // one counter write per crawl and invocation; the handlers flush
	if cfg.HoldCounters {
		counters = crawlstate.WithHeldCounters()
	}
	return crawlstate.New(t, counters, crawlstate.WithRunCheck(cfg.RunCheck),
		crawlstate.WithCircuit(cfg.CircuitFailures, cfg.CircuitProbe), crawlstate.WithCostCheck(cfg.CostCheck),
		crawlstate.WithMetricSeries(cfg.MetricSeries))
}

// newFinish is the drain checks, which announce a crawl's end to Ports.Events.
func (w *wiring) newFinish() (*finish.Checker, error) {
	prices, err := w.cfg.PriceTable()
	if err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	quiet := w.cfg.FinishQuiet
	if quiet == 0 {
		quiet = finish.DefaultQuiet
	}
	return &finish.Checker{State: w.state, Pub: w.p.Events, Send: w.p.Queue, Queue: w.cfg.ScheduleQueue,
		Every: w.cfg.FinishEvery, Quiet: quiet, StallAfter: w.cfg.FinishStall, Prices: prices, Log: w.log.With("fn", "finish")}, nil
}

// batch is the batch runner of the handler called source, which quarantines its poison messages.
func (w *wiring) batch(source string) *sqsbatch.Runner {
	return &sqsbatch.Runner{Quarantine: &quarantine.Store{Blobs: w.p.Blobs, Source: source}, Log: w.log.With("fn", source)}
}

// optOuts is the opt-out list, read from the table.
func (w *wiring) optOuts() *optout.Matcher {
	return &optout.Matcher{Store: optout.Store{T: w.p.Table}}
}

// schedule builds the frontier and the schedule handler around it.
func (w *wiring) schedule() (*frontier.Frontier, *scheduler.Handler, error) {
	cfg, log := w.cfg, w.log.With("fn", "schedule")
	prices, err := cfg.PriceTable()
	if err != nil {
		return nil, nil, fmt.Errorf("configuration: %w", err)
	}
	front := frontier.New(frontier.Config{Rules: w.rules, MaxPages: cfg.MaxPages, MaxPagesPerHost: cfg.MaxPagesPerHost,
		FetchQueue: cfg.FetchQueue, SlowQueue: cfg.SlowQueue, HostInterval: crawlstate.IntervalOf(cfg.HostRPS), SlotLead: cfg.SlotLead,
		BudgetUSD: cfg.BudgetUSD, Prices: prices, AdmitConcurrency: cfg.AdmitConcurrency,
		RunURLs: cfg.RunURLs, RunMinInterval: cfg.RunMinInterval},
		frontier.Deps{Admissions: w.state.URLs, Skips: w.state.URLs, Gates: w.state.Runs, PageBudget: w.state.Runs,
			Counters: w.state.Runs, Slots: w.state.Hosts, Starts: w.state.Runs, Send: w.p.Queue, Log: log, Crawls: w.crawls,
			OptOuts: w.optOuts()})
	d := scheduler.Deps{Admit: front, Starts: front, Blobs: w.p.Blobs, Send: w.p.Queue, Batch: w.batch("schedule"), Log: log,
		Links: w.state.URLs, Refusals: w.p.Refusals, Progress: w.state.Runs, Extend: w.state.Runs}
	if w.finish != nil && cfg.FinishEvery > 0 {
		d.Checks = w.finish
	}
	return front, scheduler.New(scheduler.Config{ScheduleQueue: cfg.ScheduleQueue, RecrawlPrefix: cfg.RecrawlPrefix,
		Concurrency: cfg.BatchConcurrency, Bounds: cfg.SpecBounds()}, d), nil
}

// keep makes h.Close close c (nil: nothing to close).
func (h *Handlers) keep(c *httpfetch.Client) {
	switch {
	case c == nil:
	case h.http == nil:
		h.http = c
	case h.http != c:
		h.extra = append(h.extra, c)
	}
}

// fetch builds the fetch handler of the function called name (Fetch, or FetchSlow: the same
// handler, which sends its re-queues to the slow lane's queue and quarantines under its own
// name), on Ports.Fetching or on its own, and returns the HTTP client that Handlers.Close closes.
func (w *wiring) fetch(name string) (*fetcher.Handler, *httpfetch.Client, error) {
	fx := w.p.Fetching
	if fx == nil {
		var err error
		if fx, err = NewFetching(w.cfg); err != nil {
			return nil, nil, err
		}
	}
	urls, hosts, runs := w.state.URLs, w.state.Hosts, w.state.Runs
	d := fetcher.Deps{Claims: urls, Outcomes: urls, URLs: urls, PageBudget: runs, Politeness: hosts, Circuits: hosts,
		HostHealth: hosts, Runs: runs, Counters: runs, HTTP: fx.traced, Robots: fx.robots, Scope: w.rules, Guard: fx.guard,
		Pages: w.p.Blobs, Send: w.p.Queue, Batch: w.batch(name), Log: w.log.With("fn", name), Crawls: w.crawls,
		OptOuts: w.optOuts(), Sessions: w.state.Sessions(), Logins: w.state.Sessions(), Login: fx.client}
	if w.p.Handoff != nil { // a nil *Pages in the interface would not be a nil interface
		d.Handoff = w.p.Handoff
	}
	if name == FetchSlow {
		d.TopUp = w.p.TopUp
	}
	return fetcher.New(fetcherConfigOf(w.cfg, name), d), fx.client, nil
}

// fetcherConfigOf is the fetch handler's config in the function called name: the slow lane's
// sends what it re-queues (a run's rest, a retry, a URL sent back alone) back to its own queue.
func fetcherConfigOf(cfg Config, name string) fetcher.Config {
	fc := fetcherConfig(cfg)
	if name == FetchSlow {
		fc.FetchQueue = cfg.SlowQueue
	}
	return fc
}

// fetcherConfig is the fetch handler's share of cfg.
func fetcherConfig(cfg Config) fetcher.Config {
	c := fetcher.DefaultConfig()
	c.FetchQueue, c.ParseQueue, c.RenderQueue = cfg.FetchQueue, cfg.ParseQueue, cfg.RenderQueue
	c.HostRPS, c.HostConcurrency, c.SlotLead = cfg.HostRPS, cfg.HostConcurrency, cfg.SlotLead
	c.Concurrency, c.MaxReceive, c.Policy = cfg.BatchConcurrency, cfg.MaxReceive, cfg.RetryPolicy()
	c.Lease = max(5*time.Minute, 4*cfg.FetchTimeout)
	c.IndexEachFile = cfg.WARCIndex != IndexPerCrawl
	c.MemoryBudget = fetcher.MemoryBudgetFor(cfg.FetchMemoryMB)
	if cfg.PauseWait > 0 {
		c.PauseWait = cfg.PauseWait
	}
	return c
}

// parse builds the parse handler.
func (w *wiring) parse() *parser.Handler {
	cfg := w.cfg
	d := parser.Deps{Parsed: w.state.URLs, Counters: w.state.Runs, Outcomes: w.state.URLs, Blobs: w.p.Blobs, Send: w.p.Queue, Batch: w.batch("parse"),
		Log: w.log.With("fn", "parse"), Crawls: w.crawls,
		Prior: w.p.Blobs} // a recrawl reuses the previous crawl's records (records/)
	if w.p.Handoff != nil { // a nil *Pages in the interface would not be a nil interface
		d.Handoff = w.p.Handoff
	}
	return parser.New(parser.Config{ScheduleQueue: cfg.ScheduleQueue, MaxDepth: cfg.MaxDepth,
		UserAgentToken: robots.ProductToken(cfg.SentUserAgent()), Concurrency: cfg.BatchConcurrency, StreamQueue: cfg.RecordStreamQueue}, d)
}

// render builds the render handler, with fetch's HTTP client, robots.txt cache and guard for
// its pages' sub-requests: Ports.Fetching's, or its own (which h.Close closes).
func (w *wiring) render(h *Handlers) (*renderer.Handler, error) {
	cfg := w.cfg
	fx := w.p.Fetching
	if fx == nil {
		var err error
		if fx, err = NewFetching(cfg); err != nil {
			return nil, err
		}
		h.extra = append(h.extra, fx.client)
	}
	d := renderer.Deps{Parsed: w.state.URLs, Blobs: w.p.Blobs, Send: w.p.Queue, Crawls: w.crawls, Browser: w.p.Browser,
		Web: renderer.Web{HTTP: fx.traced, Robots: fx.robots, Guard: fx.guard}, Batch: w.batch("render"), Log: w.log.With("fn", "render")}
	return renderer.New(renderer.Config{ParseQueue: cfg.ParseQueue, Concurrency: cfg.BatchConcurrency,
		IndexEachFile: cfg.WARCIndex != IndexPerCrawl}, d), nil
}

// idleConnsPerHost keeps as many idle connections per host as may be in flight to it, so that
// keep-alive works; with no per-host bound (a site of one's own), enough for a busy crawl.
func idleConnsPerHost(hostConcurrency int) int {
	if hostConcurrency <= 0 {
		return 64
	}
	return max(hostConcurrency, 2)
}
