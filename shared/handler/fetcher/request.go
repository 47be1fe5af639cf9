package fetcher

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/url"
	"slices"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/retry"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
	"github.com/crawlstack/crawlstack/shared/crawl/web/httpfetch"
	"github.com/crawlstack/crawlstack/shared/crawl/web/robots"
)

// What one fetch runs with: its retry policy, its crawl's settings, its share of the invocation's
// time, its redirect policy, and what a response or a failure ends in.

// policy is the retry policy of failed fetches of crawl: its spec's over the stack's
// (crawlspec.Crawl.Retry), or the handler's own (Config.Policy) when CrawlSettings has none.
func (h *Handler) policy(ctx context.Context, crawl string) retry.Policy {
	if h.crawls != nil {
		if c, err := h.crawls.For(ctx, crawl); err == nil && !c.Retry.IsZero() {
			return c.Retry
		}
	}
	if h.cfg.Policy == nil {
		return retry.DefaultPolicy()
	}
	return h.cfg.Policy
}

// storedPage is what the WARC record of resp holds.
func storedPage(resp *httpfetch.Response) warcfile.Page {
	return warcfile.Page{URL: resp.URL, Status: resp.Status, Header: resp.Header, Body: resp.Body, FetchedAt: resp.FetchedAt,
		Truncated: resp.Truncated, Request: resp.Request}
}

// follow is the redirect policy of one fetch. Following a redirect fetches its target, so the
// target must pass what schedule checks for a link (the crawl's scope, from the same seed and at
// the same depth) and robots.txt for its host. A seed's redirect is checked as a seed of its own
// (include, exclude and the trap rules only): http://example.com/ moving to
// https://www.example.com/ is the usual start of a site, and the target becomes the crawl's root
// (see seedRoot).
//
// Each hop is a request to the target's host, so it takes that host's politeness slot as any
// fetch does, at the crawl's rate for that host or the target's Crawl-delay (hopSlot).
func (h *Handler) follow(ctx context.Context, m *message.Fetch, u *url.URL, cs crawlSettings) func(*url.URL) error {
	sc := cs.scope
	return func(target *url.URL) error {
		t, err := urlnorm.Normalize(target.String())
		if err != nil {
			return errclass.Errorf(errclass.Redirect, "redirect target: %v", err)
		}
		if sc != nil {
			root := u
			if r, err := urlnorm.Normalize(m.Root); m.Root != "" && err == nil {
				root = r
			}
			if m.Depth == 0 {
				root = t
			}
			if err := sc.Check(root, t, m.Depth, h.now()); err != nil {
				return err
			}
		}
		if err := h.optedOut(ctx, t); err != nil {
			return err
		}
		rules, err := h.robots.Check(ctx, t)
		switch {
		case err != nil:
			return err
		case !rules.Allowed && rules.RetryAfter > 0:
			// The target's robots.txt is down for now: try the whole fetch again later.
			return errclass.Errorf(errclass.Connect, "robots.txt of the redirect target is unavailable: %s", rules.Reason)
		case !rules.Allowed:
			return errclass.Errorf(errclass.Robots, "disallowed by robots.txt: %s", rules.Reason)
		}
		return h.hopSlot(ctx, t.Host, max(h.interval(cs.rateOf(t.Host), rules.CrawlDelay), h.politeness.Throttled(t.Host)))
	}
}

// MaxHopWait is the longest a redirect hop waits in place for its host's politeness slot.
const MaxHopWait = 5 * time.Second

// errHopBusy says that a redirect target's host has no politeness slot soon: no failure of the
// host that redirected, whose circuit it does not count toward (noteHost).
var errHopBusy = errors.New("the fetch is tried again later")

// hopSlot books the next politeness slot of host, a redirect target's, and waits for it when it
// comes within MaxHopWait. A slot further away ends the request as connect, so that the whole
// fetch is tried again later (the politeness wait of a hop cannot go back to the queue alone).
func (h *Handler) hopSlot(ctx context.Context, host string, interval time.Duration) error {
	got, err := h.politeness.ReserveSlots(ctx, host, interval, 1, SlotHorizon)
	if err != nil {
		return fmt.Errorf("the politeness slot of the redirect target's host %s: %w", host, err)
	}
	wait := got.Start.Sub(h.now())
	if got.N == 0 || wait > MaxHopWait {
		return errclass.Errorf(errclass.Connect, "the redirect target's host %s has its next politeness slot in %s: %w",
			host, wait.Round(time.Second), errHopBusy)
	}
	if wait <= 0 {
		return nil
	}
	return waitFor(ctx, wait)
}

// storeReserve is the time kept, inside an invocation's deadline, for storing a batch's pages
// after their GETs: the WARC write, the parse messages and the final states.
const storeReserve = 10 * time.Second

// minFetchTime is the least time worth starting a GET with; with less, the URL is re-queued.
const minFetchTime = 5 * time.Second

// fetchContext is the context a record's GET runs in, with its cancel.
type fetchContext struct {
	context.Context
	cancel context.CancelFunc
}

// budget bounds the record's GET and quick retries by what is left of the invocation: in Lambda
// the context's deadline is the function's timeout, and a batch that overruns it is lost whole.
// ok is false when too little time is left to start.
func (h *Handler) budget(ctx context.Context) (fetchContext, time.Duration, bool) {
	dl, has := ctx.Deadline()
	if !has {
		c, cancel := context.WithCancel(ctx)
		return fetchContext{c, cancel}, h.cfg.MaxQuickRetry, true
	}
	left := time.Until(dl) - storeReserve
	if left < minFetchTime {
		return fetchContext{}, 0, false
	}
	c, cancel := context.WithTimeout(ctx, left)
	return fetchContext{c, cancel}, min(h.cfg.MaxQuickRetry, left/2), true
}

func (h *Handler) parseable(r *httpfetch.Response) bool {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return true // let the parser sniff it
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && slices.Contains(h.cfg.ParseTypes, mt)
}

// terminalFor is the terminal state of a permanent failure: policy refusals are skips.
func terminalFor(c errclass.Class) crawlstate.State {
	switch c {
	case errclass.SSRF, errclass.Robots, errclass.Scope, errclass.Trap, errclass.TooLarge, errclass.Type, errclass.OptedOut:
		return crawlstate.Skipped
	}
	return crawlstate.Failed
}

// crawlSettings are what a fetch uses of its crawl's settings.
type crawlSettings struct {
	rps   float64
	scope ScopeChecker
	// previous is the crawl this one recrawls ("": none).
	previous string
	// secret names the request headers whose values are secrets (crawlspec.Crawl.Secret).
	secret []string
	// crawl is the crawl's settings, whose host rules may set a host's rate and concurrency (nil:
	// the handler's own, for every host).
	crawl *crawlspec.Crawl
	// keep are the media types stored though not parsed (crawlspec.Crawl.Keep).
	keep []string
}

// rateOf is the requests per second to host: its host rule's, or the crawl's.
func (s crawlSettings) rateOf(host string) float64 {
	if s.crawl == nil {
		return s.rps
	}
	return s.crawl.RateFor(host)
}

// concurrencyOf bounds host's fetches in flight in this process: its host rule's, or base.
func (s crawlSettings) concurrencyOf(host string, base int) int {
	if s.crawl == nil {
		return base
	}
	return s.crawl.ConcurrencyFor(host, base)
}

// crawlContext returns ctx with the crawl's User-Agent, headers and TLS fingerprint for its
// requests and robots.txt checks, and its rate and scope: the handler's own without CrawlSettings.
func (h *Handler) crawlContext(ctx context.Context, crawl string) (context.Context, crawlSettings, error) {
	if h.crawls == nil {
		return ctx, crawlSettings{rps: h.cfg.HostRPS, scope: h.scope}, nil
	}
	c, err := h.crawls.For(ctx, crawl)
	if err != nil {
		return ctx, crawlSettings{}, err
	}
	if c.UserAgent != "" {
		ctx = robots.WithUserAgent(httpfetch.WithRequest(ctx, c.UserAgent, c.Header), c.UserAgent)
	}
	if c.Spec != nil && len(c.Spec.Hosts) > 0 {
		ctx = httpfetch.WithHostHeaders(ctx, c.HeaderFor) // the spec's hosts section's, by hop
	}
	if c.StickyProxies() {
		ctx = httpfetch.WithStickyProxy(ctx, c.StickyProxy)
	}
	ctx = httpfetch.WithFingerprint(ctx, c.Fingerprint) // the spec's tls_fingerprint, or the stack's
	ctx = h.sessionContext(ctx, crawl, c)               // the cookie jars of hosts with a session
	return ctx, crawlSettings{rps: c.HostRPS, scope: c.Rules, previous: c.Previous, secret: c.Secret, crawl: c, keep: c.Keep}, nil
}

// kept reports whether r is of a media type the crawl keeps though it is not parsed.
func (c crawlSettings) kept(r *httpfetch.Response) bool {
	if len(c.keep) == 0 {
		return false
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && crawlspec.Keeps(c.keep, mt)
}
