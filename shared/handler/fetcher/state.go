package fetcher

import (
	"context"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
)

// The crawl state the handler works with, one capability an interface (crawlstate.URLs, Hosts and
// Runs have them; pipeline's checks.go holds each to them). Each is safe for concurrent use, as the
// URLs of a batch are worked on at once.

// Claims holds a message's URLs for it while it works on them (DESIGN invariant 1): a claim lives
// for its lease, and a message re-queued by its owner takes the owner's claims over (prev).
type Claims interface {
	// ClaimGroup claims keys, URLs of group, for owner in one write, and returns each claimed
	// URL's state before the claim; a key left out is done, held by another owner, or gone.
	ClaimGroup(ctx context.Context, crawl, group, owner string, prev []string, lease time.Duration, keys []string) (map[string]crawlstate.State, error)
	// Done tells whether the URL is done and, when it is not, whether another owner's live claim
	// holds it: a read that ends a duplicate before it books a politeness slot.
	Done(ctx context.Context, crawl, group, key, owner string, prev []string) (done, held bool, err error)
	// Refetch claims a fetched URL again for owner because its stored page is gone; lost is the
	// URL as read before.
	Refetch(ctx context.Context, crawl, key, owner string, lease time.Duration, lost crawlstate.URL) (crawlstate.URL, error)
}

// Outcomes records how URLs ended: a message's claimed URLs, one write for their group; a
// redirect target refused before it was admitted; a queued URL skipped unclaimed.
type Outcomes interface {
	// Record writes outs, outcomes of URLs of group, and returns the keys of those another owner
	// took over meanwhile, which are not written.
	Record(ctx context.Context, crawl, group string, outs []crawlstate.Outcome) (lost []string, err error)
	// Reject records a URL that is not admitted as skipped for cause; false: it was known already.
	Reject(ctx context.Context, crawl, key, rawURL string, depth int, cause error) (bool, error)
	// SkipQueued moves a queued URL of group that no message holds to skipped for cause.
	SkipQueued(ctx context.Context, crawl, group, key string, cause error) error
}

// URLStates reads URLs' states, and tells whether a fetched URL's page was parsed (a recrawl
// reads the previous crawl's).
type URLStates interface {
	// Get reads the URL's state as its group holds it.
	Get(ctx context.Context, crawl, key string) (crawlstate.URL, error)
	// Peek reads the URL's item as it is, without what its group holds.
	Peek(ctx context.Context, crawl, key string) (crawlstate.URL, error)
	PageParsed(ctx context.Context, crawl string, u crawlstate.URL) (bool, error)
}

// PageBudget takes back pages of a crawl's page budget (--max-pages) that ended skipped.
type PageBudget interface {
	ReturnPages(ctx context.Context, crawl string, n, maxPages int) error
}

// Politeness books hosts' request slots shared by every worker (DESIGN invariant 4), and keeps the
// gap a host asked for by answering 429.
type Politeness interface {
	// ReserveSlots books n of the host's slots, interval apart, none further than horizon ahead.
	ReserveSlots(ctx context.Context, host string, interval time.Duration, n int, horizon time.Duration) (crawlstate.Slots, error)
	// ReserveRun books n of the host's slots for a run, as ReserveSlots does, only when the first
	// starts within `within` of now; otherwise none, and Free says when the host is free.
	ReserveRun(ctx context.Context, host string, interval time.Duration, n int, within, horizon time.Duration) (crawlstate.Slots, error)
	// Throttled is the host's throttled gap now, as this store last saw it (0: none).
	Throttled(host string) time.Duration
	// SlowDown raises the host's throttled gap, at least twice interval, and returns it.
	SlowDown(ctx context.Context, crawl, host string, interval time.Duration) (time.Duration, error)
}

// Circuits holds the URLs of a host whose circuit is open until its next probe.
type Circuits interface {
	// CircuitWait tells how long the host's URLs must still wait (0: go); probe says that the
	// caller took the host's due probe.
	CircuitWait(ctx context.Context, host string) (wait time.Duration, probe bool, err error)
	// CircuitOpen is how long the host's URLs must still wait for its next probe, as this store
	// last saw it; it writes nothing.
	CircuitOpen(host string) time.Duration
	// ReleaseProbe gives back a probe that CircuitWait gave and that sends no request after all.
	ReleaseProbe(ctx context.Context, host string) error
}

// HostHealth takes how each request to a host went: failed first requests in a row raise its gap
// and open its circuit; an answer closes the circuit and eases the gap (a slow one raises it).
type HostHealth interface {
	// HostFailed counts a failed request, its URL's first or not, and tells whether the host's
	// circuit is open.
	HostFailed(ctx context.Context, crawl, host string, first bool, interval time.Duration) (bool, error)
	HostAnswered(ctx context.Context, crawl, host string, took, interval time.Duration) error
}

// Runs tells a crawl's run state: running, paused or stopped (see runstate.go).
type Runs interface {
	RunOf(ctx context.Context, crawl string) (crawlstate.Run, error)
}

// Flusher writes the crawl counters buffered during a batch, at its end.
type Flusher interface {
	Flush(ctx context.Context) error
}
