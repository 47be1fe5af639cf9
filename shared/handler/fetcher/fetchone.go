package fetcher

import (
	"context"
	"errors"
	"net/url"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/recrawl"
	"github.com/crawlstack/crawlstack/shared/crawl/retry"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
	"github.com/crawlstack/crawlstack/shared/crawl/web/httpfetch"
	"github.com/crawlstack/crawlstack/shared/crawl/web/robots"
	"github.com/crawlstack/crawlstack/shared/port/turn"
)

// The steps of one URL, in order: wait for its time; end it if its crawl is stopped or it is done
// already; check the guard, the opt-out list, a sitemap's lastmod and robots.txt; take the host's
// place and politeness slot; go back to the queue, unfetched, if `crawl run` stops (turn.Stopping);
// take the claim; make the request with quick retries (none once the run stops); end the URL as
// the answer says, or keep the page for the batch's WARC file.

// fetchOne runs one URL up to the fetched response. It returns (nil, nil) when the URL is done
// without a page to store (duplicate, skipped, failed for good, or re-queued to wait).
func (h *Handler) fetchOne(ctx context.Context, w *work) (*fetched, error) {
	if w.bad != nil {
		return nil, w.bad
	}
	if waiting, err := h.keepWaiting(ctx, w); waiting {
		return nil, err
	}
	// The URL is claimed once its politeness slot is in hand: a message that must wait for its
	// host goes back to the queue holding its slot, and never takes and gives back a claim. Only
	// a message that lost the slot it held claims before it books another (bookSlot).
	f := &fetched{w: w, msg: w.msg, key: w.key, owner: w.owner(), group: w.group}
	ctx, crawl, err := h.crawlContext(ctx, f.msg.Crawl)
	if err != nil {
		return nil, err
	}
	if done, err := h.endIfStopped(ctx, f); done {
		return nil, err
	}
	if done, err := h.endIfDone(ctx, f); done {
		return nil, err
	}
	a := &fetching{f: f, u: w.u, crawl: crawl}
	if out, done, err := h.allowed(ctx, a); done {
		return out, err
	}
	return h.fetchPage(ctx, a)
}

// fetching is what the steps of one URL's request share.
type fetching struct {
	f     *fetched
	u     *url.URL
	crawl crawlSettings
	rules robots.Decision
	// fctx bounds the request to the invocation's time (budget); maxQuick is what quick retries
	// may wait in it.
	fctx     fetchContext
	maxQuick time.Duration
	// interval is the host's gap between requests, and slot the one this request goes in; base is
	// its configured gap (its rate's, or its robots.txt's Crawl-delay), without a throttled one.
	interval, base time.Duration
	slot           time.Time
	// probe: the request is the host's circuit probe (circuit.go); sent: a request went out.
	probe, sent bool
	prior       *recrawl.Prior
	tries       *retry.PolicyBackOff
	resp        *httpfetch.Response
	lastErr     error
	// hold is the request's room in the memory budget (memory.go), the page's once it is kept.
	hold *hold
}

// keepWaiting re-sends the work's message when it came before its time: still inside a long
// Retry-After, or early for the politeness slot it holds.
func (h *Handler) keepWaiting(ctx context.Context, w *work) (waiting bool, err error) {
	m := w.msg
	if wait := m.NotBefore.Sub(h.now()); !m.NotBefore.IsZero() && wait > 0 {
		return true, h.resendUnclaimed(ctx, w, wait)
	}
	if wait := m.Slot.Sub(h.now()); !m.Slot.IsZero() && wait > MaxHeldWait+h.cfg.SlotLead {
		return true, h.resendUnclaimed(ctx, w, wait)
	}
	return false, nil
}

// endIfDone ends a copy that came back to wait and finds its URL done by another, or held by
// another's live claim, before it asks robots.txt or books a slot. Left to wait for a slot, such
// copies go on booking the host's slots, and each re-queue of a duplicated message is duplicated
// in turn. A done URL whose stored page is gone is taken back to fetch again.
func (h *Handler) endIfDone(ctx context.Context, f *fetched) (done bool, err error) {
	m := f.msg
	if !cameBack(f.w) || f.w.claimed {
		return false, nil // nothing to read: a first delivery, or a URL this batch claimed already
	}
	finished, held, err := h.claims.Done(ctx, m.Crawl, f.group, f.key, f.owner, f.w.prev())
	switch {
	case err != nil:
		return true, err
	case held:
		h.log.Debug("duplicate fetch message of a url another message holds", "url", m.URL)
		return true, nil
	case !finished:
		return false, nil
	}
	h.log.Debug("duplicate fetch message of a done url", "url", m.URL)
	again, err := h.resendParse(ctx, m, f.key, f.owner)
	if again == nil || err != nil {
		return true, err
	}
	f.prev, f.claimed = again.State, true // its stored page is gone: taken back to fetch again
	return false, nil
}

// allowed checks the URL against the guard, the opt-out list, the sitemap's lastmod and
// robots.txt, and keeps the robots.txt rules. done: the URL needs no request; out is its
// unchanged page, if the sitemap says it has not changed (recrawl.go).
func (h *Handler) allowed(ctx context.Context, a *fetching) (out *fetched, done bool, err error) {
	f := a.f
	if err := h.guard.CheckURL(a.u); err != nil {
		return nil, true, h.finish(ctx, f, crawlstate.Skipped, err)
	}
	if err := h.optedOut(ctx, a.u); err != nil {
		if errclass.Of(err) == errclass.OptedOut {
			return nil, true, h.finish(ctx, f, crawlstate.Skipped, err)
		}
		return nil, true, err
	}
	if out, handled, err := h.unchangedBySitemap(ctx, f, a.crawl.previous); handled {
		return out, true, err
	}
	if a.rules, err = h.robots.Check(ctx, a.u); err != nil {
		return nil, true, h.fail(ctx, f, err)
	}
	if done, err = h.robotsRefuse(ctx, f, a.rules); !done {
		f.robots = h.heldRules(ctx, a.u)
	}
	return nil, done, err
}

// robotsRefuse ends or re-queues a URL that robots.txt does not allow.
func (h *Handler) robotsRefuse(ctx context.Context, f *fetched, rules robots.Decision) (done bool, err error) {
	if !rules.Allowed && rules.RetryAfter > 0 {
		// robots.txt is down for now (5xx, 429, unreachable): disallow, but only until it is back,
		// and only for as many tries as the policy allows; then the URL is skipped.
		cause := errclass.Errorf(errclass.RobotsUnavailable, "robots.txt is unavailable: %s", rules.Reason)
		made := f.msg.Retries + 1
		if made >= h.policy(ctx, f.msg.Crawl).Attempts(errclass.RobotsUnavailable) {
			return true, h.finish(ctx, f, crawlstate.Skipped, cause)
		}
		// Each try waits for the robots.txt cache to let go of its failure, so that it asks again.
		wait := max(h.policy(ctx, f.msg.Crawl).Delay(errclass.RobotsUnavailable, made), rules.RetryAfter)
		return true, h.requeueRetry(ctx, f, cause, wait, made)
	}
	if !rules.Allowed {
		return true, h.finish(ctx, f, crawlstate.Skipped, errclass.Errorf(errclass.Robots, "disallowed by robots.txt: %s", rules.Reason))
	}
	return false, nil
}

// fetchPage takes the host's place, its politeness slot and the claim, makes the request, and
// ends the URL as its answer says.
func (h *Handler) fetchPage(ctx context.Context, a *fetching) (*fetched, error) {
	f, host := a.f, a.u.Host
	var err error
	// The GET must end in time to store the page inside this invocation (Lambda's deadline).
	var ok bool
	if a.fctx, a.maxQuick, ok = h.budget(ctx); !ok {
		h.log.Debug("too little time left in the invocation: sent back", "url", f.msg.URL)
		return nil, h.requeue(ctx, f, time.Second) // a fresh invocation takes it
	}
	defer a.fctx.cancel()
	// A host throttled for its recent 429s, failures or slow answers takes a wider gap
	// (crawlstate.SlowDown, HostFailed, HostAnswered).
	a.base = h.interval(a.crawl.rateOf(host), a.rules.CrawlDelay)
	a.interval = max(a.base, h.politeness.Throttled(host))
	if done, err := h.waitForCircuit(ctx, a.fctx, f, host, &a.probe); done {
		return nil, err // the host's circuit is open: no slot, no claim until its probe
	}
	defer func() { h.probeSent(ctx, host, a.probe, a.sent) }()
	// Room for the body before a place or a slot: waiting for it may take a while.
	if a.hold, err = h.mem.take(a.fctx, flushOf(ctx)); err != nil {
		return nil, h.fail(ctx, f, err)
	}
	defer func() { a.hold.release() }() // nil once the page is kept
	// Take the process's per-host place first, then the shared politeness slot, so that the
	// request goes out right after its slot and never later than the next one's.
	release, err := h.hosts.acquire(a.fctx, host, a.crawl.concurrencyOf(host, h.cfg.HostConcurrency))
	if err != nil {
		return nil, h.fail(ctx, f, err)
	}
	defer release()
	if done, err := h.bookSlot(ctx, a); done {
		return nil, err
	}
	if done, err := h.waitForCircuit(ctx, a.fctx, f, host, &a.probe); done {
		return nil, err // booking the slot told of a circuit that opened meanwhile
	}
	if turn.Stopping(ctx) {
		// `crawl run` stops (its first Ctrl-C): the GETs in flight finish and are stored, and
		// this one, not started, waits in the queue for the next run.
		return nil, h.requeue(ctx, f, 0)
	}
	if dup, err := h.claim(ctx, f); dup || err != nil {
		return nil, err
	}
	a.prior = h.priorOf(ctx, a.crawl.previous, f.key, f.msg.URL)
	f.recrawl = a.prior != nil
	if a.interval > 0 && h.now().Sub(a.slot) >= a.interval/2 {
		// The claim took so long that the slot went by, and the next one may be in use: take
		// the host's next free one.
		if a.slot, err = h.takeSlot(ctx, a); err != nil || a.slot.IsZero() {
			return nil, err
		}
	}
	done, getErr, err := h.getInSession(ctx, a) // h.get, logged in where the host's rule says (login.go)
	if done {
		return nil, err
	}
	if done, err := h.settle(ctx, a, getErr); done {
		return nil, err
	}
	return h.keep(ctx, a)
}

// bookSlot waits for the politeness slot the message holds, or books the host's next one. done:
// the URL needs nothing more here (it waits in the queue, is a duplicate, or failed).
func (h *Handler) bookSlot(ctx context.Context, a *fetching) (done bool, err error) {
	m := a.f.msg
	a.slot = m.Slot
	if h.heldSlot(m, a.interval) {
		if err := h.awaitSlot(a.fctx, m.Slot); err != nil {
			return true, h.fail(ctx, a.f, err)
		}
		return false, nil
	}
	if l := a.f.w.lane; l != nil && m.Waits < h.cfg.MaxWaits {
		return h.bookRun(ctx, a, l) // a run books the rest of its slots together (runs.go)
	}
	if !m.Slot.IsZero() {
		// The message lost the slot it was sent back to wait for: it came late, or the host's gap
		// was raised since. Its copies lost the same slot; the first to claim the URL books the
		// next one, and the others end here as duplicates rather than book one each.
		if dup, err := h.claim(ctx, a.f); dup || err != nil {
			return true, err
		}
	}
	a.slot, err = h.takeSlot(ctx, a)
	return err != nil || a.slot.IsZero(), err
}

// get makes the URL's request, with the quick retries that the policy and the invocation's time
// allow.
func (h *Handler) get(a *fetching) error {
	n := 0
	a.tries = &retry.PolicyBackOff{P: h.policy(a.fctx, a.f.msg.Crawl), Made: a.f.msg.Retries}
	return retry.DoWith(a.fctx, retry.Options{MaxQuick: a.maxQuick, BackOff: a.tries}, func() (time.Duration, error) {
		if n++; n > 1 && h.circuitShut(a.fctx, a.u.Host) {
			return 0, errCircuitOpen
		}
		if n > 1 && turn.Stopping(a.fctx) {
			return 0, errSlotBusy // the run stops: a quick retry is a new request, tried next run
		}
		if n > 1 && a.interval > 0 {
			// A quick retry is a request like any other: it takes the host's next slot too.
			if wait, _, err := h.reserveSlot(a.fctx, a.u.Host, a.interval); err != nil || wait > 0 {
				return 0, errSlotBusy
			}
		}
		return h.getOnce(a, n == 1)
	})
}

// getOnce makes one request and tells the host's state how it went. A retryable status returns
// the wait its Retry-After asks for, if any.
func (h *Handler) getOnce(a *fetching, first bool) (time.Duration, error) {
	fctx, m, u := a.fctx, a.f.msg, a.u
	start, waited := h.now(), a.hold.waitedToGrow()
	a.sent = true
	r, err := h.http.GetFollowing(a.hold.with(conditional(fctx, a.prior)), u.String(), h.follow(fctx, m, u, a.crawl))
	status := 0
	if r != nil {
		status = r.Status
	}
	// The host's answer took what the GET took less its wait for room in the memory budget: a
	// loaded process must not read as a slow host, and throttle it.
	took := max(h.now().Sub(start)-(a.hold.waitedToGrow()-waited), 0)
	h.noteHost(fctx, m.Crawl, u.Host, m.Retries == 0 && first && a.f.w.receives() <= 1, err, status, took, a.base)
	if err != nil {
		a.lastErr = err
		return 0, err
	}
	// The request record keeps the header names, never a secret's value.
	r.Request = warcfile.Redacted(r.Request, a.crawl.secret...)
	if final, err := url.Parse(r.URL); err == nil {
		r.Header = redactSession(r.Header, a.crawl.crawl, final.Host) // nor a session cookie's
	}
	a.resp = r
	if c := errclass.FromStatus(r.Status); c != "" && errclass.Retryable(c) {
		// A 429 or 503 without a usable Retry-After waits as the policy says, as any 5xx.
		after, _ := retry.RetryAfter(r.Header.Get("Retry-After"), h.now(), retry.MinRetryAfter, retry.MaxRetryAfter)
		a.lastErr = errclass.Errorf(c, "status %d", r.Status)
		a.interval = h.slowDown(fctx, m.Crawl, u.Host, r.Status, a.interval)
		return after, a.lastErr
	}
	return 0, nil
}

// settle ends the URL as its request's error or status says. done: the URL needs nothing more
// (err says whether it failed); otherwise a.resp is a page to keep.
func (h *Handler) settle(ctx context.Context, a *fetching, err error) (done bool, _ error) {
	f := a.f
	f.answered(a.resp)
	if wait, open := h.circuitRetry(err, a.u.Host); open {
		// The host's circuit opened while this URL was being retried: it waits for the probe.
		return true, h.requeueRetry(ctx, f, err, wait, a.tries.Made)
	}
	var deferred *retry.Deferred
	var spent *retry.Exhausted
	switch {
	case errors.Is(err, errSlotBusy):
		// The host's next slot belongs to another worker, or the run stops: retry through the queue.
		return true, h.fail(ctx, f, a.lastErr)
	case errors.As(err, &spent) && a.tries.P.Limits(errclass.Of(spent.Err)):
		// Every request the policy allows is made: the URL failed for good, with its class.
		return true, h.finish(ctx, f, crawlstate.Failed, spent.Err)
	case errors.As(err, &deferred) && a.tries.P.Limits(errclass.Of(deferred.Err)):
		// The next try is further off than this invocation waits: the message goes back to the
		// queue with the wait (the policy's, or the server's Retry-After) and the requests made,
		// burning no receive.
		return true, h.requeueRetry(ctx, f, deferred.Err, deferred.After, a.tries.Made)
	case errors.As(err, &deferred):
		// A backend failure: SQS delivers the message again after its visibility timeout, and
		// after maxReceiveCount receives it moves to the DLQ, recorded failed.
		return true, h.fail(ctx, f, deferred.Err)
	case err != nil && errclass.Retryable(errclass.Of(err)):
		return true, h.fail(ctx, f, err)
	case err != nil:
		return true, h.finish(ctx, f, terminalFor(errclass.Of(err)), err)
	}
	if c := errclass.FromStatus(a.resp.Status); c != "" {
		return true, h.finish(ctx, f, crawlstate.Failed, errclass.Errorf(c, "status %d", a.resp.Status))
	}
	return false, nil
}

// keep readies the fetched page for the batch's WARC file: a revisit of the previous crawl's page
// as it is (recrawl.go), a page of a type that is not parsed skipped.
func (h *Handler) keep(ctx context.Context, a *fetching) (*fetched, error) {
	f, resp := a.f, a.resp
	f.resp = resp
	if unchanged, err := revisit(f, a.prior); err != nil {
		return nil, h.fail(ctx, f, err)
	} else if unchanged {
		return h.holdPage(a), nil
	}
	// A sitemap is XML, gzip or text: parse reads it. A type the crawl keeps is stored, and parse
	// records it without parsing it.
	if !f.msg.Sitemap && !h.parseable(resp) && !a.crawl.kept(resp) {
		return nil, h.finish(ctx, f, crawlstate.Skipped,
			errclass.Errorf(errclass.Type, "content type %q is not parsed", resp.Header.Get("Content-Type")))
	}
	var err error
	if f.record, err = warcfile.EncodeRecord(storedPage(resp)); err != nil {
		return nil, h.fail(ctx, f, err)
	}
	return h.holdPage(a), nil
}

// holdPage lowers the request's room to what its page holds until it is stored: its records,
// twice (the file is assembled from them), and its body only for the handoff, which is the one
// to read it again.
func (h *Handler) holdPage(a *fetching) *fetched {
	f := a.f
	n := 2 * int64(len(f.record.Response)+len(f.record.Request))
	if h.handoff != nil {
		n += int64(len(f.resp.Body))
	} else {
		f.resp.Body = nil
	}
	a.hold.keep(n)
	f.hold, a.hold = a.hold, nil
	return f
}

// flushOf returns what stores the kept pages of the invocation of ctx (kept.go), to make room.
func flushOf(ctx context.Context) func() {
	k := keptOf(ctx)
	return func() {
		if k != nil {
			k.flush()
		}
	}
}
