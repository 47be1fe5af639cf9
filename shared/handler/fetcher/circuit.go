package fetcher

import (
	"context"
	"errors"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/web/httpfetch"
)

// The host's circuit and adaptive throttling (crawlstate circuit.go): each request tells the host's
// shared state how it went, and a URL of a host whose circuit is open waits in the queue, without
// a request, a claim or a burned receive, as a politeness wait does.

// errCircuitOpen stops quick retries when the host's circuit opened meanwhile. It has no class of
// its own: the message is re-queued for the circuit's next probe with the requests it made.
var errCircuitOpen = errclass.Errorf(errclass.Scope, "the host's circuit is open")

// waitForCircuit re-queues the record when the host's circuit is open, until its next probe; done
// tells whether it did (or failed). The first URL to ask once a probe is due is let through as
// the probe, and probe tells it so (a probe asks no more).
func (h *Handler) waitForCircuit(ctx, fctx context.Context, f *fetched, host string, probe *bool) (done bool, err error) {
	if *probe {
		return false, nil
	}
	wait, took, err := h.circuits.CircuitWait(fctx, host)
	if err != nil {
		return true, h.fail(ctx, f, err)
	}
	*probe = took
	if wait <= 0 {
		return false, nil
	}
	h.log.Debug("host's circuit is open: waiting for its probe", "host", host, "url", f.msg.URL, "wait", wait.String())
	return true, h.requeue(ctx, f, wait)
}

// probeSent gives the host's probe back when the record took it but sent no request (see
// crawlstate.ReleaseProbe); a failed write is only logged: the probe is then due again after
// its interval.
func (h *Handler) probeSent(ctx context.Context, host string, probe, sent bool) {
	if !probe || sent {
		return
	}
	if err := h.circuits.ReleaseProbe(ctx, host); err != nil {
		h.log.Warn("give back a host's circuit probe", "host", host, "err", err.Error())
	}
}

// circuitShut tells whether a quick retry must stop for the host's circuit: it is open, and its
// probe is not due or was taken by another request. A retry due when the probe is takes it.
func (h *Handler) circuitShut(ctx context.Context, host string) bool {
	wait, _, err := h.circuits.CircuitWait(ctx, host)
	return err != nil || wait > 0
}

// circuitRetry is the wait of a record whose quick retries stopped for the host's circuit.
func (h *Handler) circuitRetry(err error, host string) (time.Duration, bool) {
	if !errors.Is(err, errCircuitOpen) {
		return 0, false
	}
	return max(h.circuits.CircuitOpen(host), time.Second), true
}

// noteHost tells the host's circuit and throttle how a request went: err is its error, status its
// answer's, took how long the answer took; first says whether it was its URL's first request;
// interval is the host's configured gap, without its throttled one (fetching.base). A
// failure without an answer that came through a proxy is left to the proxy's own breaker. A 429
// is slowDown's. A failed write is only logged: the crawl goes on as it was.
func (h *Handler) noteHost(ctx context.Context, crawl, host string, first bool, err error, status int, took, interval time.Duration) {
	c := errclass.FromStatus(status)
	if err != nil {
		c = errclass.Of(err)
	}
	switch {
	case err != nil && (httpfetch.ViaProxy(err) || errors.Is(err, errHopBusy)):
		return // the proxy's failure, or a redirect target's busy host: not this host's
	case c == errclass.Connect || c == errclass.Timeout || c == errclass.HTTP5xx:
		open, werr := h.health.HostFailed(ctx, crawl, host, first, interval)
		if werr != nil {
			h.log.Warn("count a failure of a host", "host", host, "err", werr.Error())
		} else if open && first {
			h.log.Debug("host's circuit is open", "host", host, "class", string(c))
		}
	case err == nil && c != errclass.HTTP429:
		if werr := h.health.HostAnswered(ctx, crawl, host, took, interval); werr != nil {
			h.log.Warn("note an answer of a host", "host", host, "err", werr.Error())
		}
	}
}
