package e2etest

import (
	"context"
	"errors"
	"time"
)

// CheckCrawlsOnce crawls the site with concurrency fetches in flight: nothing is lost, no page
// is fetched twice, and a second run of the same seed file resumes the same crawl and fetches
// nothing.
func (h *Harness) CheckCrawlsOnce(concurrency int) {
	t := h.T
	t.Helper()
	crawl := h.CrawlSite(concurrency)
	h.CheckNothingLost(crawl)
	if r := h.Site.Repeats(); len(r) != 0 {
		t.Errorf("pages fetched more than once: %v", r)
	}
	before := h.Site.Fetched()
	if again := h.CrawlSite(concurrency); again != crawl {
		t.Errorf("the same seed file started crawl %s, then %s", crawl, again)
	}
	if r := h.Site.Repeats(); len(r) != 0 || h.Site.Fetched() != before {
		t.Errorf("a second run of the same crawl fetched again: %v", r)
	}
}

// CheckDuplicatesFetchOnce crawls the site with every message of every handler sent twice:
// the claims still let each page be fetched once, and nothing is lost.
func (h *Harness) CheckDuplicatesFetchOnce(concurrency int) {
	t := h.T
	t.Helper()
	ports := h.Ports()
	sent := &CountingSender{Sender: h.Queue, Queue: h.Res.Fetch}
	ports.Queue = Doubler{sent}
	crawl, err := h.Crawl(context.Background(), h.Config(), ports, h.Queue, concurrency)
	if err != nil {
		t.Fatal(err)
	}
	h.CheckNothingLost(crawl)
	if r := h.Site.Repeats(); len(r) != 0 {
		t.Errorf("duplicate deliveries fetched pages again: %v", r)
	}
	// The doubler really doubled the fetch messages: at least two per page were sent.
	if n := sent.Sent.Load(); n < 2*int64(h.Site.Pages) {
		t.Errorf("%d fetch messages sent, want at least %d (two per page)", n, 2*h.Site.Pages)
	}
}

// Crash runs a crawl of the site that "dies" at write limit, with concurrency fetches in
// flight, and fails the test unless the run ended in that crash.
func (h *Harness) Crash(limit int64, concurrency int) {
	h.T.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ports, q := (&Crasher{Limit: limit, Cancel: cancel}).Wrap(h.Queue, h.Table, h.Blobs)
	if _, err := h.Crawl(ctx, h.Config(), ports, q, concurrency); !errors.Is(err, context.Canceled) {
		h.T.Fatalf("the crashing run ended with %v, want a crash", err)
	}
}

// Resume runs the crawl again after a Crash, as a new process (fresh handlers, a cold Bloom
// filter) on the same state, and checks that nothing was lost (the live counters may drift) and
// that only the pages whose GET was under way at the crash, at most concurrency, were fetched
// twice. It returns the pages fetched twice.
func (h *Harness) Resume(concurrency int) map[string]int {
	t := h.T
	t.Helper()
	h.CheckInvariants(h.CrawlSite(concurrency), false)
	r := h.Site.Repeats()
	if len(r) > concurrency {
		t.Errorf("%d pages fetched twice, more than the %d in flight at the crash: %v", len(r), concurrency, r)
	}
	return r
}

// CheckPoliteness checks the times of the site's page requests against a host rate of one
// request per interval. The slots are taken at exact times, but each request travels a little
// after that, which a loaded machine stretches: so no two requests may come within minGap of
// each other (a burst), and the n requests must span at least (n-1) intervals less slack.
func (h *Harness) CheckPoliteness(interval, minGap, slack time.Duration) {
	t := h.T
	t.Helper()
	times := h.Site.Times()
	n := len(times)
	if n < 2 {
		t.Fatalf("the site saw %d page requests", n)
	}
	for i := 1; i < n; i++ {
		if gap := times[i].Sub(times[i-1]); gap < minGap {
			t.Errorf("requests %d and %d were %v apart: a burst, with a slot every %v", i-1, i, gap, interval)
		}
	}
	if span, want := times[n-1].Sub(times[0]), time.Duration(n-1)*interval-slack; span < want {
		t.Errorf("%d requests in %v, want at least %v at one per %v", n, span, want, interval)
	}
}
