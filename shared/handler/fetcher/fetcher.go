// Package fetcher is the fetch handler: it claims an admitted URL, checks the SSRF guard, robots.txt
// and the host's politeness slot, GETs the page with class-aware retries, stores the responses of
// the batch in one WARC file, sends one parse message naming the file's pages, and records each
// URL's terminal state. A fetch message may carry several URLs; each is worked on as if it came
// alone (see work.go).
//
// Waiting never burns receive counts (DESIGN invariant 4): a URL that must wait for its host, or for
// a long Retry-After, is re-sent with a delay and its current message is acknowledged. A transient
// failure fails only its record; on the last allowed receive the URL is recorded as failed with its
// class and the message goes on to the dead-letter queue.
package fetcher

import (
	"context"
	"log/slog"
	"net/url"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/optout"
	"github.com/crawlstack/crawlstack/shared/crawl/recrawl"
	"github.com/crawlstack/crawlstack/shared/crawl/retry"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
	"github.com/crawlstack/crawlstack/shared/crawl/web/httpfetch"
	"github.com/crawlstack/crawlstack/shared/crawl/web/robots"
	"github.com/crawlstack/crawlstack/shared/handler/sqsbatch"
	"github.com/crawlstack/crawlstack/shared/observe/telemetry"
	"github.com/crawlstack/crawlstack/shared/port/blob"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// Getter fetches a page (httpfetch.Client).
// It follows a redirect only where follow allows (httpfetch.Client.GetFollowing).
type Getter interface {
	GetFollowing(ctx context.Context, rawURL string, follow func(target *url.URL) error) (*httpfetch.Response, error)
}

// ScopeChecker tells whether the crawl may fetch u, a link from seed's scope at depth
// (scope.Rules). The handler asks it about redirect targets, which schedule never saw.
type ScopeChecker interface {
	Check(seed, u *url.URL, depth int, now time.Time) error
}

// RobotsChecker answers robots.txt questions (robots.Cache).
type RobotsChecker interface {
	Check(ctx context.Context, u *url.URL) (robots.Decision, error)
}

// RobotsHolder gives the robots.txt rules a check applied, for parse to refuse the links they
// disallow (robots.Cache). A RobotsChecker that is not one sends no rules to parse.
type RobotsHolder interface {
	Held(ctx context.Context, u *url.URL, maxBody int) (robots.Held, bool)
}

// URLGuard refuses URLs that point at non-public addresses, other schemes or ports.
type URLGuard interface {
	CheckURL(u *url.URL) error
}

// PageStore stores WARC files, and reads a record back to check that a page recorded as fetched
// is still there (blob.Store).
type PageStore interface {
	Put(ctx context.Context, key string, body []byte, contentType string) error
	GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error)
}

// DeferredPutter is a PageStore that can store a file at once and make it durable later
// (fileblob.Store): the handler records the batch's pages while their file syncs.
type DeferredPutter interface {
	PutDeferred(ctx context.Context, key string, body []byte, contentType string) (durable func() error, err error)
}

// Handoff takes stored pages for a parse handler in the same process (handoff.Pages), so that it
// need not read them back; it may refuse any page.
type Handoff interface {
	Offer(ref message.Ref, p warcfile.Page) bool
}

// CrawlSettings tells the settings of one crawl: the stack's, with its spec's over them
// (specstore.Store).
type CrawlSettings interface {
	For(ctx context.Context, crawl string) (*crawlspec.Crawl, error)
}

// The implementations in packages the handler imports anyway; the adapters' are held in
// ports_test.go.
var (
	_ Getter        = (*httpfetch.Client)(nil)
	_ Getter        = telemetry.Fetches{}
	_ RobotsChecker = (*robots.Cache)(nil)
	_ RobotsHolder  = (*robots.Cache)(nil)
	_ PageStore     = blob.Store(nil)
	_ OptOuts       = (*optout.Matcher)(nil)
)

// Config tunes the handler.
type Config struct {
	FetchQueue, ParseQueue string
	// RenderQueue is the render step's queue (shared/handler/renderer): the parse messages of a
	// crawl whose spec has a render section go there instead of ParseQueue. Empty: the stack has
	// no render step, and such a crawl's pages are parsed from their static HTML (logged).
	RenderQueue string
	// HostRPS is the request rate per host shared by every worker; 0 lifts it (Crawl-delay still
	// applies).
	HostRPS float64
	// HostConcurrency bounds the fetches in flight per host in this process (0: no bound).
	HostConcurrency int
	// Concurrency is how many URLs of one batch are worked on at once.
	Concurrency int
	// MaxReceive is the queue's maxReceiveCount: on that receive a failing URL is recorded failed.
	MaxReceive int
	// Lease is how long a claim holds before another worker may take the URL over.
	Lease time.Duration
	// MaxQuickRetry is the time quick retries may wait inside one invocation.
	MaxQuickRetry time.Duration
	// Policy bounds the requests of a URL whose fetch fails, and spaces them (nil: the default,
	// retry.DefaultPolicy). A retry that does not fit in the invocation's quick budget re-queues
	// the message with the wait and the count of requests made, and burns no receive.
	Policy retry.Policy
	// MaxWaits bounds the politeness re-queues.
	MaxWaits int
	// ParseTypes are the media types worth storing and parsing; others are skipped (class type).
	ParseTypes []string
	// SlotLead is how much earlier than its politeness slot a message may arrive, besides the
	// second SQS delays round to, and wait for it in place: the event source's batching window,
	// which holds a message that long before the batch is handed over. A message re-queued for a
	// slot is sent back that much earlier too.
	SlotLead time.Duration
	// PauseWait is how long a paused crawl's message waits in the queue before it is looked at
	// again (see runstate.go; at most SQS's 15 minutes).
	PauseWait time.Duration
	// IndexEachFile stores a CDXJ index beside each WARC file (a second PUT per batch); without
	// it, `crawl index` builds the crawl's from its files (shared/ops/crawlindex).
	IndexEachFile bool
	// MemoryBudget bounds the bytes of the bodies and WARC records the process holds at once,
	// over all its batches (0: no bound; see memory.go). MemoryBudgetFor gives it from the
	// function's memory.
	MemoryBudget int64
	// TopUpStay is the least time an invocation's runs must keep it for it to take more messages
	// from its queue (Deps.TopUp; 0: DefaultTopUpStay): its long poll for them ends half of it
	// before the runs do, so that it does not keep the invocation longer.
	TopUpStay time.Duration
	// MaxDecodedBytes is the HTTP client's cap on a decoded body (0:
	// httpfetch.DefaultMaxDecodedBytes): what one page may hold at most.
	MaxDecodedBytes int64
}

// MemoryBudgetFor is the memory budget of a process of memoryMB megabytes (a Lambda function's
// AWS_LAMBDA_FUNCTION_MEMORY_SIZE): half of it, the other half being the Go runtime's, the
// garbage the collector has yet to free, the SDK clients and the batch's other work.
func MemoryBudgetFor(memoryMB int) int64 { return int64(memoryMB) << 20 / 2 }

// DefaultConfig returns the defaults documented in docs/safety.md and docs/cli.md.
func DefaultConfig() Config {
	return Config{HostRPS: 1, HostConcurrency: 2, Concurrency: 10, MaxReceive: 5, Lease: 5 * time.Minute,
		MaxQuickRetry: 10 * time.Second, Policy: retry.DefaultPolicy(), MaxWaits: 2000, PauseWait: DefaultPauseWait,
		ParseTypes: []string{"text/html", "application/xhtml+xml"}, IndexEachFile: true}
}

// Handler is the fetch handler.
type Handler struct {
	cfg        Config
	claims     Claims
	outcomes   Outcomes
	urls       URLStates
	pageBudget PageBudget
	politeness Politeness
	circuits   Circuits
	health     HostHealth
	runs       Runs
	counters   Flusher
	http       Getter
	robots     RobotsChecker
	scope      ScopeChecker
	guard      URLGuard
	pages      PageStore
	crawls     CrawlSettings
	handoff    Handoff
	send       queue.Sender
	topUp      Receiver
	batch      *sqsbatch.Runner
	log        *slog.Logger
	hosts      hostLimiter
	optOuts    OptOuts
	sessions   SessionStore
	logins     LoginStore
	login      LoginSender
	loginLocks sync.Map // jarRef -> *sync.Mutex (login.go)
	mem        *memory
	said       saidHosts
	now        func() time.Time
}

// Deps are the handler's collaborators. The crawl state's capabilities (state.go) are each a
// field: crawlstate.Store gives them all, and each of its URLs, Hosts and Runs some.
type Deps struct {
	Claims     Claims
	Outcomes   Outcomes
	URLs       URLStates
	PageBudget PageBudget
	Politeness Politeness
	Circuits   Circuits
	HostHealth HostHealth
	Runs       Runs
	// Counters writes the crawl counters buffered during a batch, at its end.
	Counters Flusher
	HTTP     Getter
	Robots   RobotsChecker
	// Scope checks redirect targets; nil follows every redirect that Guard and robots.txt allow.
	Scope ScopeChecker
	Guard URLGuard
	Pages PageStore
	// Handoff, if set, is offered each page once it is stored and recorded, before its parse
	// message goes out. Only for a parse handler in the same process: on Lambda, leave it nil.
	Handoff Handoff
	Send    queue.Sender
	// TopUp, if set, lets an invocation that its runs keep alive take more messages from its own
	// queue (Config.FetchQueue) meanwhile (topup.go): the slow lane's. nil: only the batch it got.
	TopUp Receiver
	// Batch supplies the quarantine for poison messages and the logger of failed ones; nil
	// quarantines nothing (poison then fails, to reach the DLQ). Config.Concurrency bounds the
	// URLs worked on at once.
	Batch *sqsbatch.Runner
	Log   *slog.Logger
	// Crawls, if set, gives each crawl's User-Agent, extra headers, rate and scope (a spec's);
	// nil: the handler's own for every crawl.
	Crawls CrawlSettings
	// OptOuts, if set, is the opt-out list, checked again before each request (see OptOuts).
	OptOuts OptOuts
	// Sessions, if set, keeps the cookie jars of the hosts whose rule asks for a session
	// (sessions.go); nil: no host keeps cookies.
	Sessions SessionStore
	// Logins and Login, if both set, log in to the hosts whose rule has a login (login.go): the
	// hosts' logins in the state, and the client that sends the login requests.
	Logins LoginStore
	Login  LoginSender
	// Now is the clock (nil: time.Now); tests set it.
	Now func() time.Time
}

// New returns a Handler, ready to use.
func New(cfg Config, d Deps) *Handler {
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.Batch == nil {
		d.Batch = &sqsbatch.Runner{Log: d.Log}
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	cfg.Concurrency = max(cfg.Concurrency, 1)
	if cfg.MaxDecodedBytes <= 0 {
		cfg.MaxDecodedBytes = httpfetch.DefaultMaxDecodedBytes
	}
	return &Handler{mem: newMemory(cfg.MemoryBudget, cfg.MaxDecodedBytes), cfg: cfg, claims: d.Claims, outcomes: d.Outcomes, urls: d.URLs, pageBudget: d.PageBudget,
		politeness: d.Politeness, circuits: d.Circuits, health: d.HostHealth, runs: d.Runs, counters: d.Counters,
		http: d.HTTP, robots: d.Robots, scope: d.Scope, guard: d.Guard, pages: d.Pages, crawls: d.Crawls, handoff: d.Handoff,
		send: d.Send, topUp: d.TopUp, batch: d.Batch, log: d.Log, optOuts: d.OptOuts, sessions: d.Sessions, logins: d.Logins, login: d.Login, now: d.Now}
}

// fetched is a page waiting for the batch's WARC file.
type fetched struct {
	w    *work
	msg  *message.Fetch
	key  string
	prev crawlstate.State
	// owner is the claim's owner: the id of the work's message (work.owner); group is the URL's
	// group, where it is claimed and recorded (crawlstate.GroupOf).
	owner, group string
	// claimed: the URL is held for owner (see claim); prev is its state when claimed.
	claimed bool
	resp    *httpfetch.Response
	// record is the page's WARC records, encoded as soon as the response is in, in parallel with
	// the batch's other fetches.
	record warcfile.Record
	// hold is the room the page holds in the memory budget until it is stored.
	hold *hold
	// unchanged is set when the page is a revisit of the previous crawl's (recrawl.go), and prior
	// is what that crawl knew of it.
	unchanged *message.Unchanged
	prior     *recrawl.Prior
	// status and bytes are the HTTP status and body size of the URL's last response (answered),
	// and recrawl says the previous crawl fetched the page: the crawl's counts of responses
	// (crawlstate.Responses).
	status  int
	bytes   int64
	recrawl bool
	// robots are the robots.txt rules the URL's check applied, when they can travel with the page
	// to parse (robotsparse.go); nil otherwise.
	robots *message.RobotsRules
}

// handle processes one SQS batch of fetch messages.
func (h *Handler) handle(ctx context.Context, ev events.SQSEvent) events.SQSEventResponse {
	ctx, _ = withBook(ctx)
	ctx, js := withJars(ctx)
	ds := h.decode(ev)
	held := h.holdPaused(ctx, ds)
	all := workOf(ds)
	ctx = withClaims(ctx, ds)
	failed := h.fetchAll(ctx, all)
	js.save(ctx, h)
	resp := events.SQSEventResponse{BatchItemFailures: append(held, h.failures(ctx, ds, failed)...)}
	if err := h.counters.Flush(ctx); err != nil {
		h.log.Warn("flush the crawl counters", "err", err.Error())
	}
	return resp
}
