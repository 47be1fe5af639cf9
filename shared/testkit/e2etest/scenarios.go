package e2etest

import (
	"context"
	"errors"
	"math"
	"net/url"
	"time"

	"github.com/crawlstack/crawlstack/shared/app/pipeline"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/port/table"
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
// the claims still let each page be fetched once, nothing is lost, and the responses are counted
// once.
func (h *Harness) CheckDuplicatesFetchOnce(concurrency int) {
	t := h.T
	t.Helper()
	ports := h.Ports()
	sent := &CountingSender{Sender: h.Queue, Queue: h.Res.Fetch, Slow: h.Res.FetchSlow}
	ports.Queue = Doubler{sent}
	crawl, err := h.Crawl(context.Background(), h.Config(), ports, h.Queue, concurrency)
	if err != nil {
		t.Fatal(err)
	}
	h.CheckNothingLost(crawl)
	if r := h.Site.Repeats(); len(r) != 0 {
		t.Errorf("duplicate deliveries fetched pages again: %v", r)
	}
	// ... and counted their responses once: a 200 and its body a page.
	h.checkResponses(crawl, crawlstate.Responses{Statuses: statusCounts(h.Site.Pages, 0), Bytes: h.Site.Traffic().Bytes})
	// The doubler really doubled the fetch messages: each page's URL was sent at least twice.
	if n := sent.URLs.Load(); n < 2*int64(h.Site.Pages) {
		t.Errorf("%d URLs sent in fetch messages, want at least %d (two per page)", n, 2*h.Site.Pages)
	}
	h.checkRunsSent(sent)
}

// checkRunsSent fails the test of a harness with Runs if no fetch message held several URLs: the
// scenario never saw a run.
func (h *Harness) checkRunsSent(sent *CountingSender) {
	h.T.Helper()
	if h.Runs && sent.Several.Load() == 0 {
		h.T.Errorf("no fetch message of several URLs in %d sent: the crawl had no runs", sent.Sent.Load())
	}
}

// CrashPoints crawls the site to its end with every write counted, checks that nothing was lost,
// and returns the write counts at the given fractions of that whole crawl: the crash matrices pick
// their points this way, since fixed counts drift to the end of the crawl (and test nothing) as
// the pipeline comes to write less. The harness must be a fresh one, not the one to crash.
func (h *Harness) CrashPoints(concurrency int, fractions ...float64) []int64 {
	t := h.T
	t.Helper()
	c := &Crasher{Limit: math.MaxInt64, Res: h.Res, Cancel: func() {}}
	ports, q := c.Wrap(h.Queue, h.Table, h.Blobs)
	crawl, err := h.Crawl(context.Background(), h.Config(), ports, q, concurrency)
	if err != nil {
		t.Fatal(err)
	}
	h.CheckNothingLost(crawl)
	total := c.Writes()
	points := make([]int64, len(fractions))
	for i, f := range fractions {
		points[i] = max(1, int64(f*float64(total)))
	}
	t.Logf("a whole crawl of the site took %d writes; crash points %v", total, points)
	return points
}

// Crash runs a crawl of the site that "dies" at write limit, with concurrency fetches in
// flight, and fails the test unless the run ended in that crash.
func (h *Harness) Crash(limit int64, concurrency int) {
	h.T.Helper()
	h.crash(&Crasher{Limit: limit}, concurrency)
}

// CrashAt runs a crawl of the site that "dies" the nth time the pipeline reaches step, with
// concurrency fetches in flight, and fails the test unless the run ended in that crash.
func (h *Harness) CrashAt(step Step, n int64, concurrency int) {
	h.T.Helper()
	h.crash(&Crasher{At: step, N: n}, concurrency)
}

func (h *Harness) crash(c *Crasher, concurrency int) {
	h.T.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.Cancel, c.Res = cancel, h.Res
	ports, q := c.Wrap(h.Queue, h.Table, h.Blobs)
	crawl, err := h.Crawl(ctx, h.Config(), ports, q, concurrency)
	if !errors.Is(err, context.Canceled) || !c.Crashed() {
		h.T.Fatalf("the run meant to crash %s ended with %v (crashed: %v)", c, err, c.Crashed())
	}
	h.heldAtCrash = h.held(crawl)
}

// held returns the paths of crawl's URLs that a worker holds: claimed, and not done.
func (h *Harness) held(crawl string) map[string]bool {
	h.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	held, err := Held(ctx, h.Table, crawl)
	if err != nil {
		h.T.Fatalf("list the URLs held at the crash: %v", err)
	}
	return held
}

// Held returns the paths of crawl's URLs that a worker holds in tb: claimed, and not done. After
// a crash, these are the only pages that the resumed crawl may fetch again.
func Held(ctx context.Context, tb table.Table, crawl string) (map[string]bool, error) {
	held := map[string]bool{}
	err := crawlstate.New(tb).EachURL(ctx, crawl, func(u crawlstate.URL) error {
		if u.Owner != "" && !u.State.Terminal() {
			p, err := url.Parse(u.URL)
			if err != nil {
				return err
			}
			held[p.Path] = true
		}
		return nil
	})
	return held, err
}

// Resume runs the crawl again after a Crash, as a new process (fresh handlers, a cold Bloom
// filter) on the same state, and checks that nothing was lost (the live counters may drift) and
// that only pages held by a worker at the crash (claimed, not recorded: their GET was under way,
// or their batch was not stored yet) were fetched twice. It returns the pages fetched twice.
func (h *Harness) Resume(concurrency int) map[string]int {
	t := h.T
	t.Helper()
	h.CheckInvariants(h.CrawlSite(concurrency), false)
	r := h.Site.Repeats()
	for p := range r {
		if !h.heldAtCrash[p] {
			t.Errorf("%s was fetched twice, but no worker held it at the crash (held: %d pages)", p, len(h.heldAtCrash))
		}
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

// CheckTransientFaults crawls the site while everything goes wrong at once and the run goes on:
// the queue, the table and the blob store each fail every every-th call, every message is
// delivered twice, one page in seven answers 503 twice before it answers, one in nine answers
// slowly, and every page is a seed at a host rate of rps, whose slots another crawler holds for
// the first two seconds, so that fetch messages must wait in the queue however slowly the
// machine runs. The crawl must finish by itself with nothing lost (the live counters may drift: a failed
// counter flush is only logged). A page may be fetched again where a fault struck between its GET
// and its record (its WARC file or its record failed): that is the price of at-least-once, and
// the count is logged; CheckDuplicatesFetchOnce proves that duplicates alone fetch nothing twice.
func (h *Harness) CheckTransientFaults(every int64, rps float64, concurrency int) {
	t := h.T
	t.Helper()
	for i := 1; i < h.Site.Pages; i += 7 {
		h.Site.Unavailable(i, 2)
	}
	for i := 3; i < h.Site.Pages; i += 9 {
		h.Site.Slow(i, 300*time.Millisecond)
	}
	h.occupyHost(time.Duration(float64(time.Second)/rps), 2*time.Second)
	f := &Flaky{Every: every}
	ports, q := f.Wrap(h.Queue, h.Table, h.Blobs)
	sent := &CountingSender{Sender: ports.Queue, Queue: h.Res.Fetch, Slow: h.Res.FetchSlow}
	ports.Queue = Doubler{sent}
	cfg := h.Config()
	cfg.HostRPS = rps
	// The retry policy's waits (2 s, 8 s) are not what this scenario is about: CheckFailingURLGivesUp
	// checks the policy. Short ones keep the run's length to the faults and the host's rate.
	cfg.RetryWait = 50 * time.Millisecond
	// Nor is the host's circuit, which the 503s may open when several come in a row: its probe
	// comes every second here, not every 30 s (CheckCircuitOpensAndCloses checks the circuit).
	cfg.CircuitProbe = time.Second
	crawl, err := h.Crawl(context.Background(), cfg, ports, q, concurrency, h.Site.PageURLs()...)
	if err != nil {
		t.Fatalf("the crawl with transient faults ended with %v, want it to finish", err)
	}
	h.CheckInvariants(crawl, false)
	qf, tf, bf := f.Faults()
	t.Logf("faults injected: %d queue, %d table, %d blob; %d answers 503; %d fetch messages delayed; %d pages fetched twice",
		qf, tf, bf, h.Site.Refused(), sent.Delayed.Load(), len(h.Site.Repeats()))
	if qf == 0 || tf == 0 || bf == 0 {
		t.Errorf("faults injected: %d queue, %d table, %d blob: want some of each", qf, tf, bf)
	}
	if h.Site.Refused() == 0 || sent.Delayed.Load() == 0 {
		t.Errorf("%d answers 503 and %d delayed fetch messages: the site's faults or the host's rate never struck",
			h.Site.Refused(), sent.Delayed.Load())
	}
	h.checkRunsSent(sent)
}

// occupyHost reserves the site's politeness slots at interval, as another crawler of the same
// host would, until the next free one is at least ahead away: the crawl's first fetches must then
// wait longer than a fetch waits in place, and re-queue their messages.
func (h *Harness) occupyHost(interval, ahead time.Duration) {
	h.T.Helper()
	u, err := url.Parse(h.Site.URL)
	if err != nil {
		h.T.Fatal(err)
	}
	st := crawlstate.New(h.Table)
	for wait := time.Duration(0); wait < ahead; {
		if wait, err = st.ReserveSlot(context.Background(), u.Host, interval); err != nil {
			h.T.Fatalf("reserve the host's slots: %v", err)
		}
	}
}

// CheckFailingURLGivesUp crawls the site, every page a seed, with page i answering 503 to every
// request and the retry policy at maxTries requests and waits of a few milliseconds: the crawl
// finishes by itself; page i was requested exactly maxTries times and its URL failed with class
// http_5xx, with nothing in a dead-letter queue; every other page was fetched once.
func (h *Harness) CheckFailingURLGivesUp(i, maxTries, concurrency int) {
	t := h.T
	t.Helper()
	h.Site.Unavailable(i, 1<<30)
	cfg := h.Config()
	cfg.MaxTries, cfg.RetryWait = maxTries, 5*time.Millisecond
	crawl, err := h.Crawl(context.Background(), cfg, h.Ports(), h.Queue, concurrency, h.Site.PageURLs()...)
	if err != nil {
		t.Fatal(err)
	}
	if n := h.Site.Refused(); n != maxTries {
		t.Errorf("the failing page was requested %d times, want %d", n, maxTries)
	}
	ctx := context.Background()
	st := crawlstate.New(h.Table)
	states := map[crawlstate.State]int{}
	if err := st.EachURL(ctx, crawl, func(u crawlstate.URL) error {
		states[u.State]++
		if u.URL == h.Site.PageURL(i) && (u.State != crawlstate.Failed || u.Class != errclass.HTTP5xx) {
			t.Errorf("the failing page's URL is %s/%s, want failed/%s", u.State, u.Class, errclass.HTTP5xx)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if states[crawlstate.Fetched] != h.Site.Pages-1 || states[crawlstate.Failed] != 1 || states[crawlstate.Queued] != 0 {
		t.Errorf("items by state = %v, want %d fetched, 1 failed and none queued", states, h.Site.Pages-1)
	}
	if r := h.Site.Repeats(); len(r) != 0 {
		t.Errorf("pages fetched twice: %v", r)
	}
	h.CheckDLQs(map[string]int{})
}

// CheckBadURLsGiveUpWithTheDefaults crawls the site, every page a seed, with the default retry
// policy and fetch limits and four bad pages: one never answers, one trickles a byte every
// TrickleGap, one answers 500 and one 429 with a Retry-After it cannot use. The crawl finishes by
// itself in under two minutes; each bad page was requested as often as the default policy allows
// and ended failed with its class, and is in the crawl's list of what it gave up; every other
// page was fetched once, and no DLQ holds anything. The harness's Timeout must leave room for the
// crawl to run over two minutes, so that the check can fail.
func (h *Harness) CheckBadURLsGiveUpWithTheDefaults(concurrency int) {
	t := h.T
	t.Helper()
	bad := map[int]struct {
		fault Fault
		class errclass.Class
	}{
		1: {Dead, errclass.Timeout},
		2: {Trickle, errclass.Timeout},
		3: {Always500, errclass.HTTP5xx},
		4: {BadRetryAfter, errclass.HTTP429},
	}
	for i, b := range bad {
		h.Site.Bad(i, b.fault)
	}
	cfg := h.Config()
	d := pipeline.DefaultConfig()
	cfg.MaxTries, cfg.RetryClasses, cfg.RetryWait, cfg.FetchTimeout = d.MaxTries, d.RetryClasses, d.RetryWait, d.FetchTimeout
	start := time.Now()
	crawl, err := h.Crawl(context.Background(), cfg, h.Ports(), h.Queue, concurrency, h.Site.PageURLs()...)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("the crawl with %d bad pages took %v", len(bad), took.Round(time.Second))
	if took >= 2*time.Minute {
		t.Errorf("the crawl took %v, want under two minutes", took)
	}
	for i, b := range bad {
		want := d.RetryPolicy().Attempts(b.class) // a timeout's fewer: each holds a fetch invocation for the whole timeout
		if n := h.Site.BadHits(i); n != want {
			t.Errorf("bad page %d (%v) was requested %d times, want %d", i, b.class, n, want)
		}
	}
	st := crawlstate.New(h.Table)
	states := map[crawlstate.State]int{}
	if err := st.EachURL(context.Background(), crawl, func(u crawlstate.URL) error {
		states[u.State]++
		for i, b := range bad {
			if u.URL == h.Site.PageURL(i) && (u.State != crawlstate.Failed || u.Class != b.class) {
				t.Errorf("bad page %d ended %s/%s (%s), want failed/%s", i, u.State, u.Class, u.Detail, b.class)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if states[crawlstate.Fetched] != h.Site.Pages-len(bad) || states[crawlstate.Failed] != len(bad) || states[crawlstate.Queued] != 0 {
		t.Errorf("items by state = %v, want %d fetched, %d failed and none queued", states, h.Site.Pages-len(bad), len(bad))
	}
	tally, err := st.Tally(context.Background(), crawl)
	if err != nil {
		t.Fatal(err)
	}
	if len(tally.GaveUp) != len(bad) {
		t.Errorf("the crawl lists %d URLs given up, want the %d bad pages", len(tally.GaveUp), len(bad))
	}
	if r := h.Site.Repeats(); len(r) != 0 {
		t.Errorf("pages fetched twice: %v", r)
	}
	h.CheckDLQs(map[string]int{})
}
