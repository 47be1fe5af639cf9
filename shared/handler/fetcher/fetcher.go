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
	"errors"
	"log/slog"
	"net/url"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/recrawl"
	"github.com/crawlstack/crawlstack/shared/crawl/retry"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
	"github.com/crawlstack/crawlstack/shared/crawl/web/httpfetch"
	"github.com/crawlstack/crawlstack/shared/crawl/web/robots"
	"github.com/crawlstack/crawlstack/shared/handler/sqsbatch"
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

// Config tunes the handler.
type Config struct {
	FetchQueue, ParseQueue string
	// HostRPS is the request rate per host shared by every worker; 0 lifts it (Crawl-delay still
	// applies).
	HostRPS float64
	// HostConcurrency bounds the fetches in flight per host in this process (0: no bound).
	HostConcurrency int
	// Concurrency is how many records of one batch are fetched at once.
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
}

// DefaultConfig returns the defaults documented in the README.
func DefaultConfig() Config {
	return Config{HostRPS: 1, HostConcurrency: 2, Concurrency: 10, MaxReceive: 5, Lease: 5 * time.Minute,
		MaxQuickRetry: 10 * time.Second, Policy: retry.DefaultPolicy(), MaxWaits: 2000, PauseWait: DefaultPauseWait,
		ParseTypes: []string{"text/html", "application/xhtml+xml"}, IndexEachFile: true}
}

// Handler is the fetch handler.
type Handler struct {
	cfg     Config
	state   *crawlstate.Store
	http    Getter
	robots  RobotsChecker
	scope   ScopeChecker
	guard   URLGuard
	pages   PageStore
	crawls  CrawlSettings
	handoff Handoff
	send    queue.Sender
	batch   *sqsbatch.Runner
	log     *slog.Logger
	hosts   hostLimiter
	optOuts OptOuts
	// Now is the clock; tests replace it.
	Now func() time.Time
}

// Deps are the handler's collaborators.
type Deps struct {
	State  *crawlstate.Store
	HTTP   Getter
	Robots RobotsChecker
	// Scope checks redirect targets; nil follows every redirect that Guard and robots.txt allow.
	Scope ScopeChecker
	Guard URLGuard
	Pages PageStore
	// Handoff, if set, is offered each page once it is stored and recorded, before its parse
	// message goes out. Only for a parse handler in the same process: on Lambda, leave it nil.
	Handoff Handoff
	Send    queue.Sender
	Batch   *sqsbatch.Runner
	Log     *slog.Logger
	// Crawls, if set, gives each crawl's User-Agent, extra headers, rate and scope (a spec's);
	// nil: the handler's own for every crawl.
	Crawls CrawlSettings
	// OptOuts, if set, is the opt-out list, checked again before each request (see OptOuts).
	OptOuts OptOuts
}

// New returns a Handler.
func New(cfg Config, d Deps) *Handler {
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.Batch == nil {
		d.Batch = &sqsbatch.Runner{Log: d.Log}
	}
	b := *d.Batch
	b.Concurrency = max(cfg.Concurrency, 1)
	cfg.Concurrency = b.Concurrency
	return &Handler{cfg: cfg, state: d.State, http: d.HTTP, robots: d.Robots, scope: d.Scope, guard: d.Guard, pages: d.Pages,
		crawls: d.Crawls, handoff: d.Handoff, send: d.Send, batch: &b, log: d.Log, hosts: hostLimiter{max: cfg.HostConcurrency}, optOuts: d.OptOuts, Now: time.Now}
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
	// unchanged is set when the page is a revisit of the previous crawl's (recrawl.go), and prior
	// is what that crawl knew of it.
	unchanged *message.Unchanged
	prior     *recrawl.Prior
}

// Handle processes one SQS batch of fetch messages.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	ctx, _ = withBook(ctx)
	ds := h.decode(ev)
	held := h.holdPaused(ctx, ds)
	all := workOf(ds)
	ctx = withClaims(ctx, ds)
	pages, failed := h.fetchAll(ctx, all)
	for _, n := range h.storeAll(ctx, pages) {
		failed[n] = true
	}
	resp := events.SQSEventResponse{BatchItemFailures: append(held, h.failures(ctx, ds, failed)...)}
	if err := h.state.Flush(ctx); err != nil {
		h.log.Warn("flush the crawl counters", "err", err.Error())
	}
	return resp, nil
}

// fetchOne runs one URL up to the fetched response. It returns (nil, nil) when the URL is done
// without a page to store (duplicate, skipped, failed for good, or re-queued to wait).
func (h *Handler) fetchOne(ctx context.Context, w *work) (*fetched, error) {
	if w.bad != nil {
		return nil, w.bad
	}
	m, u := w.msg, w.u
	if wait := m.NotBefore.Sub(h.Now()); !m.NotBefore.IsZero() && wait > 0 {
		return nil, h.resendUnclaimed(ctx, w, wait) // still inside a long Retry-After: keep waiting
	}
	if wait := m.Slot.Sub(h.Now()); !m.Slot.IsZero() && wait > MaxHeldWait+h.cfg.SlotLead {
		return nil, h.resendUnclaimed(ctx, w, wait) // early for its politeness slot: keep waiting
	}
	// The URL is claimed once its politeness slot is in hand: a message that must wait for its
	// host goes back to the queue holding its slot, and never takes and gives back a claim. Only
	// a message that lost the slot it held claims before it books another (below).
	f := &fetched{w: w, msg: m, key: w.key, owner: w.owner(), group: w.group}
	ctx, crawl, err := h.crawlContext(ctx, m.Crawl)
	if err != nil {
		return nil, err
	}
	if done, err := h.endIfStopped(ctx, f); done {
		return nil, err
	}
	if cameBack(w) {
		// A copy that came back to wait may find its URL done by another, or held by another's
		// live claim: it ends here, before it asks robots.txt or books a slot. Left to wait for a
		// slot, such copies go on booking the host's slots, and each re-queue of a duplicated
		// message is duplicated in turn.
		if done, held, err := h.state.Done(ctx, m.Crawl, f.group, f.key, f.owner, m.Prev); err != nil {
			return nil, err
		} else if held {
			h.log.Debug("duplicate fetch message of a url another message holds", "url", m.URL)
			return nil, nil
		} else if done {
			h.log.Debug("duplicate fetch message of a done url", "url", m.URL)
			again, err := h.resendParse(ctx, m, f.key, f.owner)
			if again == nil || err != nil {
				return nil, err
			}
			f.prev, f.claimed = again.State, true // its stored page is gone: taken back to fetch again
		}
	}
	if err := h.guard.CheckURL(u); err != nil {
		return nil, h.finish(ctx, f, crawlstate.Skipped, err)
	}
	if err := h.optedOut(ctx, u); err != nil {
		if errclass.Of(err) == errclass.OptedOut {
			return nil, h.finish(ctx, f, crawlstate.Skipped, err)
		}
		return nil, err
	}
	if out, handled, err := h.unchangedBySitemap(ctx, f, crawl.previous); handled {
		return out, err // no request: the sitemap says the page has not changed (recrawl.go)
	}
	rules, err := h.robots.Check(ctx, u)
	if err != nil {
		return nil, h.fail(ctx, f, err)
	}
	if !rules.Allowed && rules.RetryAfter > 0 {
		// robots.txt is down for now (5xx, 429, unreachable): disallow, but only until it is back,
		// and only for as many tries as the policy allows; then the URL is skipped.
		cause := errclass.Errorf(errclass.RobotsUnavailable, "robots.txt is unavailable: %s", rules.Reason)
		made := m.Retries + 1
		if made >= h.policy().Attempts(errclass.RobotsUnavailable) {
			return nil, h.finish(ctx, f, crawlstate.Skipped, cause)
		}
		// Each try waits for the robots.txt cache to let go of its failure, so that it asks again.
		wait := max(h.policy().Delay(errclass.RobotsUnavailable, made), rules.RetryAfter)
		return nil, h.requeueRetry(ctx, f, wait, made)
	}
	if !rules.Allowed {
		return nil, h.finish(ctx, f, crawlstate.Skipped, errclass.Errorf(errclass.Robots, "disallowed by robots.txt: %s", rules.Reason))
	}
	// The GET must end in time to store the page inside this invocation (Lambda's deadline).
	fctx, maxQuick, ok := h.budget(ctx)
	if !ok {
		return nil, h.requeue(ctx, f, time.Second) // too little time left: a fresh invocation
	}
	defer fctx.cancel()
	// A host throttled for its recent 429s, failures or slow answers takes a wider gap
	// (crawlstate.SlowDown, HostFailed, HostAnswered).
	interval := max(h.interval(crawl.rps, rules.CrawlDelay), h.state.Throttled(u.Host))
	probe, sent := false, false
	if done, err := h.waitForCircuit(ctx, fctx, f, u.Host, &probe); done {
		return nil, err // the host's circuit is open: no slot, no claim until its probe
	}
	defer func() { h.probeSent(ctx, u.Host, probe, sent) }()
	// Take the process's per-host place first, then the shared politeness slot, so that the
	// request goes out right after its slot and never later than the next one's.
	release, err := h.hosts.acquire(fctx, u.Host)
	if err != nil {
		return nil, h.fail(ctx, f, err)
	}
	defer release()
	slot := m.Slot
	if h.heldSlot(m, interval) {
		if err := h.awaitSlot(fctx, m.Slot); err != nil {
			return nil, h.fail(ctx, f, err)
		}
	} else {
		if !m.Slot.IsZero() {
			// The message lost the slot it was sent back to wait for: it came late, or the host's
			// gap was raised since. Its copies lost the same slot; the first to claim the URL books
			// the next one, and the others end here as duplicates rather than book one each.
			if dup, err := h.claim(ctx, f); dup || err != nil {
				return nil, err
			}
		}
		if slot, err = h.takeSlot(ctx, fctx, f, u.Host, interval); err != nil || slot.IsZero() {
			return nil, err
		}
	}
	if done, err := h.waitForCircuit(ctx, fctx, f, u.Host, &probe); done {
		return nil, err // booking the slot told of a circuit that opened meanwhile
	}
	if dup, err := h.claim(ctx, f); dup || err != nil {
		return nil, err
	}
	prior := h.priorOf(ctx, crawl.previous, f.key, m.URL)
	if interval > 0 && h.Now().Sub(slot) >= interval/2 {
		// The claim took so long that the slot went by, and the next one may be in use: take
		// the host's next free one.
		if slot, err = h.takeSlot(ctx, fctx, f, u.Host, interval); err != nil || slot.IsZero() {
			return nil, err
		}
	}
	var resp *httpfetch.Response
	var lastErr error
	attempt := 0
	tries := &retry.PolicyBackOff{P: h.policy(), Made: m.Retries}
	err = retry.DoWith(fctx, retry.Options{MaxQuick: maxQuick, BackOff: tries}, func() (time.Duration, error) {
		if attempt++; attempt > 1 && h.circuitShut(fctx, u.Host) {
			return 0, errCircuitOpen
		}
		if attempt > 1 && interval > 0 {
			// A quick retry is a request like any other: it takes the host's next slot too.
			if wait, _, err := h.reserveSlot(fctx, u.Host, interval); err != nil || wait > 0 {
				return 0, errSlotBusy
			}
		}
		start := h.Now()
		sent = true
		r, err := h.http.GetFollowing(conditional(fctx, prior), u.String(), h.follow(fctx, m, u, crawl.scope))
		status := 0
		if r != nil {
			status = r.Status
		}
		h.noteHost(fctx, m.Crawl, u.Host, m.Retries == 0 && attempt == 1 && w.receives() <= 1, err, status, h.Now().Sub(start), interval)
		if err != nil {
			lastErr = err
			return 0, err
		}
		resp = r
		if c := errclass.FromStatus(r.Status); c != "" && errclass.Retryable(c) {
			// A 429 or 503 without a usable Retry-After waits as the policy says, as any 5xx.
			after, _ := retry.RetryAfter(r.Header.Get("Retry-After"), h.Now(), retry.MinRetryAfter, retry.MaxRetryAfter)
			lastErr = errclass.Errorf(c, "status %d", r.Status)
			interval = h.slowDown(fctx, m.Crawl, u.Host, r.Status, interval)
			return after, lastErr
		}
		return 0, nil
	})
	var deferred *retry.Deferred
	var spent *retry.Exhausted
	if wait, open := h.circuitRetry(err, u.Host); open {
		// The host's circuit opened while this URL was being retried: it waits for the probe.
		return nil, h.requeueRetry(ctx, f, wait, tries.Made)
	}
	switch {
	case errors.Is(err, errSlotBusy):
		// The host's next slot belongs to another worker: retry through the queue.
		return nil, h.fail(ctx, f, lastErr)
	case errors.As(err, &spent) && h.policy().Limits(errclass.Of(spent.Err)):
		// Every request the policy allows is made: the URL failed for good, with its class.
		return nil, h.finish(ctx, f, crawlstate.Failed, spent.Err)
	case errors.As(err, &deferred) && h.policy().Limits(errclass.Of(deferred.Err)):
		// The next try is further off than this invocation waits: the message goes back to the
		// queue with the wait (the policy's, or the server's Retry-After) and the requests made,
		// burning no receive.
		return nil, h.requeueRetry(ctx, f, deferred.After, tries.Made)
	case errors.As(err, &deferred):
		// A backend failure: SQS delivers the message again after its visibility timeout, and
		// after maxReceiveCount receives it moves to the DLQ, recorded failed.
		return nil, h.fail(ctx, f, deferred.Err)
	case err != nil && errclass.Retryable(errclass.Of(err)):
		return nil, h.fail(ctx, f, err)
	case err != nil:
		return nil, h.finish(ctx, f, terminalFor(errclass.Of(err)), err)
	}
	if c := errclass.FromStatus(resp.Status); c != "" {
		return nil, h.finish(ctx, f, crawlstate.Failed, errclass.Errorf(c, "status %d", resp.Status))
	}
	f.resp = resp
	if unchanged, err := revisit(f, prior); err != nil {
		return nil, h.fail(ctx, f, err)
	} else if unchanged {
		return f, nil
	}
	if !m.Sitemap && !h.parseable(resp) { // a sitemap is XML, gzip or text: parse reads it
		return nil, h.finish(ctx, f, crawlstate.Skipped,
			errclass.Errorf(errclass.Type, "content type %q is not parsed", resp.Header.Get("Content-Type")))
	}
	f.resp = resp
	if f.record, err = warcfile.EncodeRecord(storedPage(resp)); err != nil {
		return nil, h.fail(ctx, f, err)
	}
	return f, nil
}
