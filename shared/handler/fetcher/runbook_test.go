package fetcher_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/scope"
	"github.com/crawlstack/crawlstack/shared/crawl/web/netguard"
	"github.com/crawlstack/crawlstack/shared/crawl/web/robots"
	"github.com/crawlstack/crawlstack/shared/handler/fetcher"
)

// A run books its slots as it starts (runs.go): a run late for the slots it was sent with, or
// sent with none, loses nothing, and two runs of one host keep its interval.

// politeRuns tunes a handler to the run tests' host: a request every runInterval, one at a time.
func politeRuns(c *fetcher.Config) {
	c.HostRPS, c.HostConcurrency = float64(time.Second)/float64(runInterval), 1
}

// requestTimes returns when each path was requested, once each, in the order of the requests.
func (e *env) requestTimes(paths []string) []time.Time {
	e.t.Helper()
	e.site.mu.Lock()
	defer e.site.mu.Unlock()
	var out []time.Time
	for _, p := range paths {
		if n := len(e.site.at[p]); n != 1 {
			e.t.Errorf("%s requested %d times, want once", p, n)
			continue
		}
		out = append(out, e.site.at[p][0])
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}

// checkInterval fails the test when two requests to the host came closer than a held slot allows:
// a request goes out no sooner than its slot and less than half an interval after it, so two
// requests are at least half an interval apart (heldSlot).
func checkInterval(t *testing.T, at []time.Time, interval time.Duration) {
	t.Helper()
	for i := 1; i < len(at); i++ {
		if gap := at[i].Sub(at[i-1]); gap < interval/2 {
			t.Errorf("requests %d and %d %v apart, want at least %v", i-1, i, gap, interval/2)
		}
	}
}

// TestARunLateForItsSlotsBooksThemOnceAndLosesNone: a run that reaches its fetcher long after the
// slots it was sent with (the run waited in the queue behind the lane's busy invocations), or
// that holds none (as the frontier sends a run now), is fetched whole in one invocation, its URLs
// an interval apart, with one write on the host's slot item for all of them and nothing sent
// back to the queue. Before, each URL of a late run booked a slot of its own (a write each) and,
// with the host booked further, went back alone. The host is slower here than the other run
// tests' (lateInterval): a URL more than half an interval late for its slot takes the run's next,
// and on a loaded machine a 200 ms interval left too little for that not to happen by chance.
func TestARunLateForItsSlotsBooksThemOnceAndLosesNone(t *testing.T) {
	const lateInterval = 600 * time.Millisecond
	for _, tc := range []struct {
		name string
		sent time.Duration // the run's first slot, from now; 0: no slots
	}{
		{"a minute late", -time.Minute},
		{"sent with none", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(c *fetcher.Config) {
				c.HostRPS, c.HostConcurrency = float64(time.Second)/float64(lateInterval), 1
			})
			paths := runPaths(5)
			slots := make([]time.Time, len(paths))
			if tc.sent != 0 {
				for i := range slots {
					slots[i] = time.Now().Add(tc.sent + time.Duration(i)*lateInterval)
				}
			}
			before := e.slots.Writes()
			if got := e.handle(e.run("late", paths, slots)); len(got) != 0 {
				t.Fatalf("BatchItemFailures = %v, want none", got)
			}
			if n := e.slots.Writes() - before; n != 1 {
				t.Errorf("%d writes on the host's slot item, want 1 for the whole run", n)
			}
			checkInterval(t, e.requestTimes(paths), lateInterval)
			e.wantFetched(paths)
			if back := e.received(fetchQ); len(back) != 0 {
				t.Errorf("%d fetch messages sent back, want none", len(back))
			}
			if msgs := e.received(parseQ); len(msgs) != 1 {
				t.Errorf("%d parse messages, want 1 for the run's one file", len(msgs))
			}
		})
	}
}

// slowRunAnswer is how long the test site takes to answer a path under /run/slow: over
// crawlstate.SlowAnswer, and so more than three times a quick answer; two in a row throttle its
// host.
const slowRunAnswer = 1200 * time.Millisecond

// TestAThrottledRunKeepsItsSlotsAtTheWiderGap: two slow answers in the middle of a run double its
// host's gap; the run goes on in the slots it booked that are the new gap apart, rather than drop
// them all and book the rest after them, which left the host idle for as long as they lasted (the
// realistic crawl's largest host: a lane of 94 URLs went back to the queue for 100 s, again and
// again). The request after the second slow one keeps the wider gap (a quick answer a second
// later halves it again: crawlstate's speedUp), and none goes back to the queue.
func TestAThrottledRunKeepsItsSlotsAtTheWiderGap(t *testing.T) {
	const interval = 600 * time.Millisecond
	e := newEnv(t, func(c *fetcher.Config) { c.HostRPS, c.HostConcurrency = float64(time.Second)/float64(interval), 1 })
	paths := runPaths(9)
	// Three quick answers first: the average they are slow against. The second slow answer in
	// a row throttles the host.
	paths[3], paths[4] = "/run/slow-3", "/run/slow-4"
	if got := e.handle(e.run("throttled", paths, make([]time.Time, len(paths)))); len(got) != 0 {
		t.Fatalf("BatchItemFailures = %v, want none", got)
	}
	e.wantFetched(paths)
	at := e.requestTimes(paths)
	if len(at) != len(paths) {
		t.Fatalf("%d requests, want %d", len(at), len(paths))
	}
	slowEnd := at[4].Add(slowRunAnswer)
	booked := at[0].Add(time.Duration(len(paths)) * interval) // the end of the run's first booking
	within := 0
	for _, r := range at[5:] {
		if r.Before(booked) {
			within++
		}
	}
	if within == 0 {
		t.Errorf("no request between the slow answer's end (%v after the first) and the end of the run's booking (%v): "+
			"the run dropped its slots and the host stood idle", slowEnd.Sub(at[0]), booked.Sub(at[0]))
	}
	checkInterval(t, at, interval)
	// The slot after the slow request's is the throttled gap (twice the host's) after it, and
	// the slow request may have gone out up to half an interval after its own slot.
	if gap, least := at[5].Sub(at[4]), 2*interval-interval/2; gap < least {
		t.Errorf("the request after the second slow one came %v after it, want at least %v at the throttled gap", gap, least)
	}
	if back := e.received(fetchQ); len(back) != 0 {
		t.Errorf("%d fetch messages sent back, want none: the run waits in place", len(back))
	}
	// The quick answers after the raise sped the host up again: what is left of its throttled
	// gap is back under its configured one (it was compared with the throttled gap itself once,
	// and never halved, so a throttled run went on at the wider gap until it decayed).
	u, _ := url.Parse(e.url("/"))
	if left := e.state.Throttled(u.Host); left > interval {
		t.Errorf("after the run's quick answers the host's throttled gap is %v, want it halved to at most its configured %v", left, interval)
	}
}

// TestARunOfAHostBookedFarAheadWaitsInTheQueueWhole: a run whose host another worker has booked
// further ahead than a run waits in place goes back to the queue as one message, holding no slot,
// due when the host is free, with the run's claim handed on: no request, no URL alone, and no
// write on the slot item but the one that found it booked.
func TestARunOfAHostBookedFarAheadWaitsInTheQueueWhole(t *testing.T) {
	e := newEnv(t, politeRuns)
	u, _ := url.Parse(e.url("/"))
	other := crawlstate.New(e.urls) // another worker's store, whose booking this one has not seen
	if _, err := other.ReserveSlots(context.Background(), u.Host, runInterval, 100, 0); err != nil {
		t.Fatal(err)
	}
	paths := runPaths(4)
	before := e.slots.Writes()
	if got := e.handle(e.run("busy", paths, make([]time.Time, len(paths)))); len(got) != 0 {
		t.Fatalf("BatchItemFailures = %v, want none", got)
	}
	if n := e.slots.Writes() - before; n != 1 {
		t.Errorf("%d writes on the host's slot item, want 1 (the failed condition that found it booked)", n)
	}
	for _, p := range paths {
		if n := e.site.hitsOf(p); n != 0 {
			t.Errorf("%s requested %d times, want none yet", p, n)
		}
	}
	back := e.received(fetchQ)
	if len(back) != 1 {
		t.Fatalf("%d fetch messages sent back, want the run in one", len(back))
	}
	m, err := message.DecodeFetch(back[0].Body)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, p := range paths {
		want = append(want, e.url(p))
	}
	if got := m.URLList(); !slices.Equal(got, want) {
		t.Fatalf("sent back %v, want %v", got, want)
	}
	// The host is booked 100 intervals (20 s) ahead: the run is due then, less nothing (no lead here).
	if d := e.send.delays[back[0].Body]; d < 18*time.Second || d > 20*time.Second {
		t.Errorf("sent back with delay %v, want about 20s, when the host is free", d)
	}
	for _, one := range m.Split() {
		if !one.Slot.IsZero() || one.Waits != 1 {
			t.Errorf("%s sent back with slot %v and %d waits, want none and 1", one.URL, one.Slot, one.Waits)
		}
		other := *one
		other.Prev = nil
		if err := e.claimAs(&other, "another"); err != crawlstate.ErrClaimed {
			t.Errorf("%s taken by another message (%v): the run's claim was given up", one.URL, err)
		}
		if err := e.claimAs(one, "sent-back"); err != nil {
			t.Errorf("%s sent back cannot claim its URL: %v", one.URL, err)
		}
	}
}

// TestTwoRunsOfOneHostKeepItsInterval: two runs of one host worked on at once by two workers, each
// with a store of its own on one table (two fetch invocations, or the lane's and fetch's), book
// their slots on the host's one item: every URL is fetched once and no two requests come closer
// than a held slot allows.
func TestTwoRunsOfOneHostKeepItsInterval(t *testing.T) {
	e := newEnv(t, politeRuns)
	cfg := fetcher.DefaultConfig()
	cfg.FetchQueue, cfg.ParseQueue, cfg.MaxQuickRetry = fetchQ, parseQ, 0
	politeRuns(&cfg)
	second := fetcher.New(cfg, withState(crawlstate.New(e.urls), fetcher.Deps{HTTP: e.client,
		Robots: robots.New(e.client, userAgent, time.Hour), Scope: scope.DefaultRules(),
		Guard: netguard.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, nil),
		Pages: e.blobs, Send: e.send, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: e.clock.now}))
	all := runPaths(12)
	a, b := all[:6], all[6:]
	recA, recB := e.run("run-a", a, make([]time.Time, len(a))), e.run("run-b", b, make([]time.Time, len(b)))
	var wg sync.WaitGroup
	for _, w := range []struct {
		h   *fetcher.Handler
		rec events.SQSMessage
	}{{e.h, recA}, {second, recB}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := w.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{w.rec}})
			if err != nil || len(resp.BatchItemFailures) != 0 {
				t.Errorf("Handle = %+v, %v; want no failures", resp, err)
			}
		}()
	}
	wg.Wait()
	checkInterval(t, e.requestTimes(all), runInterval)
	e.wantFetched(all)
	if back := e.received(fetchQ); len(back) != 0 {
		t.Errorf("%d fetch messages sent back, want none: the second run waits in place for its slots", len(back))
	}
}

// TestTwoCopiesOfARunInOneBatchGoBackAsOne: a run sent twice (the same body under two ids, as a
// doubled send makes it) whose host is booked far ahead goes back to the queue as one message.
// Worked on as one lane, the two copies went back as two, the second never claiming, and with
// every doubled send back their number doubled.
func TestTwoCopiesOfARunInOneBatchGoBackAsOne(t *testing.T) {
	e := newEnv(t, politeRuns)
	u, _ := url.Parse(e.url("/"))
	other := crawlstate.New(e.urls)
	if _, err := other.ReserveSlots(context.Background(), u.Host, runInterval, 100, 0); err != nil {
		t.Fatal(err)
	}
	first := e.run("twice", runPaths(4), make([]time.Time, 4))
	second := first
	second.MessageId = "twice-copy"
	if got := e.handle(first, second); len(got) != 0 {
		t.Fatalf("BatchItemFailures = %v, want none", got)
	}
	if back := e.received(fetchQ); len(back) != 1 {
		t.Fatalf("%d fetch messages sent back, want the run once", len(back))
	}
}

// TestARunSentBackOftenWithoutClaimingKeepsItsClaimsHolder: a run whose URLs an earlier delivery
// claimed (X) rides behind another run of its host in the lane, and the host is booked further
// ahead than a run waits in place, so its lane sends both back, again and again, the run behind
// never claiming. More times than message.MaxPrev: the run still names X among the owners whose
// claim passes to it, and once the host is free it is fetched. Each delivery that went back
// without claiming named itself, and pushed X out: the run was then taken for another message's
// and dropped, its URLs never fetched (the single-host crawl of make cost lost 20 URLs so).
func TestARunSentBackOftenWithoutClaimingKeepsItsClaimsHolder(t *testing.T) {
	e := newEnv(t, politeRuns)
	ctx := context.Background()
	tail := runPaths(3)
	var keys []string
	for _, p := range tail {
		keys = append(keys, keyOf(t, e.url(p)))
	}
	rec := e.run("tail", tail, make([]time.Time, len(tail)))
	if got, err := e.state.ClaimGroup(ctx, crawl, "run-tail", "X#1", nil, time.Minute, keys); err != nil || len(got) != len(keys) {
		t.Fatalf("the earlier delivery's claim: %d of %d URLs, %v", len(got), len(keys), err)
	}
	m, err := message.DecodeFetch(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	m.Requeued("X#1", true) // as that delivery sent it back
	if rec.Body, err = message.Encode(m); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(e.url("/"))
	if _, err := crawlstate.New(e.urls).ReserveSlots(ctx, u.Host, runInterval, 15, 0); err != nil {
		t.Fatal(err) // another worker's booking: 3 s ahead, further than a run waits in place
	}
	// tailBack is the bodies of the messages sent back that carry the run behind.
	tailBack := func() []string {
		var back []string
		for _, msg := range e.received(fetchQ) {
			if strings.Contains(msg.Body, "/run/0") {
				back = append(back, msg.Body)
			}
		}
		return back
	}
	for round := range message.MaxPrev + 2 {
		head := []string{fmt.Sprintf("/run/h%da", round), fmt.Sprintf("/run/h%db", round)}
		if got := e.handle(e.run(fmt.Sprintf("head%d", round), head, make([]time.Time, len(head))), rec); len(got) != 0 {
			t.Fatalf("round %d: BatchItemFailures = %v, want none", round, got)
		}
		back := tailBack()
		if len(back) != 1 {
			t.Fatalf("round %d: the run behind went back in %d messages, want 1 (the host was free early: raise the booking)", round, len(back))
		}
		rec.MessageId, rec.Body = fmt.Sprintf("tail-%d", round), back[0]
	}
	// The host frees within seconds: the run, now at its lane's head, claims and is fetched.
	deadline := time.Now().Add(15 * time.Second)
	for e.site.hitsOf(tail[0]) == 0 && time.Now().Before(deadline) {
		if got := e.handle(rec); len(got) != 0 {
			t.Fatalf("BatchItemFailures = %v, want none", got)
		}
		back := tailBack()
		if len(back) == 0 {
			break
		}
		rec.MessageId, rec.Body = rec.MessageId+"+", back[0]
	}
	e.wantFetched(tail)
}
