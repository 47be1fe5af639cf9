package fetcher_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/handler/fetcher"
)

// runInterval is the host's gap between requests in the run tests (5 requests a second).
const runInterval = 200 * time.Millisecond

// run is a record of a run as the frontier sends one (shared/crawl/frontier/runs.go): the paths,
// admitted in one group, each holding the host's slot at slots[i].
func (e *env) run(id string, paths []string, slots []time.Time) events.SQSMessage {
	e.t.Helper()
	rec := e.record(id, "/", 1)
	group := "run-" + id
	var targets []message.Target
	for i, p := range paths {
		u := e.url(p)
		if _, _, err := e.state.AdmitIn(context.Background(), crawl, group, keyOf(e.t, u), u, e.url("/"), 1, "links"); err != nil {
			e.t.Fatal(err)
		}
		targets = append(targets, message.Target{URL: u, Root: e.url("/"), Depth: 1, Group: group, Slot: slots[i],
			Gap: runInterval.Milliseconds()})
	}
	body, err := message.Encode(message.Pack(crawl, targets))
	if err != nil {
		e.t.Fatal(err)
	}
	rec.Body = body
	return rec
}

func runPaths(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("/run/%d", i))
	}
	return out
}

// TestARunIsFetchedOneAfterAnotherInItsSlots: a run's URLs, sent out of order, are each requested
// once, in their slots' order and no sooner than their slots (so each at least an interval after
// the slot of the one before), and their pages go into one WARC file named by one parse message.
func TestARunIsFetchedOneAfterAnotherInItsSlots(t *testing.T) {
	e := newEnv(t, func(c *fetcher.Config) { c.HostRPS, c.HostConcurrency = float64(time.Second)/float64(runInterval), 2 })
	paths := runPaths(5)
	t0 := time.Now().Add(100 * time.Millisecond)
	slots := make([]time.Time, len(paths))
	for i := range slots {
		slots[i] = t0.Add(time.Duration(i) * runInterval)
	}
	// Sent in another order than their slots': the fetcher orders them.
	order := []int{3, 0, 4, 1, 2}
	var ps []string
	var ss []time.Time
	for _, i := range order {
		ps, ss = append(ps, paths[i]), append(ss, slots[i])
	}
	if got := e.handle(e.run("run-1", ps, ss)); len(got) != 0 {
		t.Fatalf("BatchItemFailures = %v, want none", got)
	}
	var last time.Time
	for i, p := range paths {
		e.site.mu.Lock()
		at := slices.Clone(e.site.at[p])
		e.site.mu.Unlock()
		if len(at) != 1 {
			t.Fatalf("%s requested %d times, want once", p, len(at))
		}
		if at[0].Before(slots[i]) {
			t.Errorf("%s requested %v before its slot", p, slots[i].Sub(at[0]))
		}
		if i > 0 && !at[0].After(last) {
			t.Errorf("%s requested %v before the one before it: want the slots' order", p, last.Sub(at[0]))
		}
		last = at[0]
		if it := e.item(p); it.State != crawlstate.Fetched {
			t.Errorf("%s = %s, want fetched", p, it.State)
		}
	}
	msgs := e.received(parseQ)
	if len(msgs) != 1 {
		t.Fatalf("%d parse messages, want 1", len(msgs))
	}
	pm, err := message.DecodeParse(msgs[0].Body)
	if err != nil {
		t.Fatal(err)
	}
	if _, pages := pm.PageList(); len(pages) != len(paths) {
		t.Errorf("the parse message names %d pages, want %d in its one file", len(pages), len(paths))
	}
	if back := e.received(fetchQ); len(back) != 0 {
		t.Errorf("%d fetch messages sent back, want none", len(back))
	}
}

// TestTheRestOfARunGoesBackWhenTheInvocationEnds: the URLs of a run whose slots come later than
// the invocation can fetch and store them go back to the queue together in one message, due for
// the first of their slots, holding the claim the run took: no other message can take them, and
// the one sent back can. Those within its time are fetched and recorded.
func TestTheRestOfARunGoesBackWhenTheInvocationEnds(t *testing.T) {
	e := newEnv(t, func(c *fetcher.Config) { c.HostRPS, c.HostConcurrency = float64(time.Second)/float64(runInterval), 2 })
	paths := runPaths(4)
	now := time.Now()
	far := now.Add(40 * time.Second)
	slots := []time.Time{now.Add(50 * time.Millisecond), now.Add(250 * time.Millisecond), far, far.Add(runInterval)}
	ctx, cancel := context.WithDeadline(context.Background(), now.Add(30*time.Second))
	defer cancel()
	resp, err := e.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{e.run("run-1", paths, slots)}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle = %+v, %v; want no failures", resp, err)
	}
	for i, p := range paths {
		want, hits := crawlstate.Fetched, 1
		if i >= 2 {
			want, hits = crawlstate.Queued, 0
		}
		if it := e.item(p); it.State != want {
			t.Errorf("%s = %s, want %s", p, it.State, want)
		}
		if n := e.site.hitsOf(p); n != hits {
			t.Errorf("%s requested %d times, want %d", p, n, hits)
		}
	}
	back := e.received(fetchQ)
	if len(back) != 1 {
		t.Fatalf("%d fetch messages sent back, want the rest of the run in one", len(back))
	}
	m, err := message.DecodeFetch(back[0].Body)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.URLList(); !slices.Equal(got, []string{e.url(paths[2]), e.url(paths[3])}) {
		t.Fatalf("sent back %v, want %v", got, paths[2:])
	}
	if d := e.send.delays[back[0].Body]; d < 30*time.Second || d > 40*time.Second {
		t.Errorf("sent back with delay %v, want about 40s, to its first slot", d)
	}
	for _, one := range m.Split() {
		if !one.Slot.Equal(far) && !one.Slot.Equal(far.Add(runInterval)) {
			t.Errorf("%s sent back without its slot: %v", one.URL, one.Slot)
		}
		// Still claimed: another message cannot take it, the one sent back can.
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

// TestALoneURLOfARunsHostJoinsTheRun: a message of one URL (one sent back alone, say) of the host
// whose run the batch works on is worked on in the run's lane: the run's one write books its slot too, it keeps the host's interval, and nothing
// goes back to the queue. Alone in its own lane it found the host booked as far as the run went,
// and went back to come back alone at its slot.
func TestALoneURLOfARunsHostJoinsTheRun(t *testing.T) {
	e := newEnv(t, politeRuns)
	paths := runPaths(5)
	run := e.run("run", paths, make([]time.Time, len(paths)))
	lone := e.recordOf("lone", e.url("/about"), 1)
	before := e.slots.Writes()
	if failed := e.handle(run, lone); len(failed) != 0 {
		t.Fatalf("BatchItemFailures = %v, want none", failed)
	}
	all := append(slices.Clone(paths), "/about")
	e.wantFetched(all)
	checkInterval(t, e.requestTimes(all), runInterval)
	if back := e.received(fetchQ); len(back) != 0 {
		t.Errorf("%d fetch messages went back, want none: the lone URL takes the run's next slot", len(back))
	}
	if n := e.slots.Writes() - before; n != 1 {
		t.Errorf("%d writes on the host's slot item, want 1: the run books the lone URL's slot with its own", n)
	}
}

// TestARunWithNoTimeLeftGoesBackWhole: a run that its invocation reaches with too little time
// left to fetch and store a page (a batch whose workers were busy until then) goes back to the
// queue as one message, not URL by URL: each URL sent back alone came back alone, booked a slot
// of its own and went back again to wait for it.
func TestARunWithNoTimeLeftGoesBackWhole(t *testing.T) {
	e := newEnv(t, func(c *fetcher.Config) {
		politeRuns(c)
		c.SlotLead = 2 * time.Second // the stack's batching window
	})
	paths := runPaths(5)
	// 14 s: less than the 10 s a batch keeps to store its pages and the 5 s a request needs.
	ctx, cancel := context.WithTimeout(context.Background(), 14*time.Second)
	defer cancel()
	resp, err := e.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{e.run("run", paths, make([]time.Time, len(paths)))}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle = %+v, %v; want no failures", resp, err)
	}
	for _, p := range paths {
		if n := e.site.hitsOf(p); n != 0 {
			t.Fatalf("%s requested %d times, want none: no time was left", p, n)
		}
	}
	urls := 0
	back := e.received(fetchQ)
	for _, m := range back {
		f, err := message.DecodeFetch(m.Body)
		if err != nil {
			t.Fatal(err)
		}
		urls += len(f.Split())
	}
	if len(back) != 1 || urls != len(paths) {
		t.Fatalf("%d messages with %d URLs went back, want one with all %d",
			len(back), urls, len(paths))
	}
	e.send.mu.Lock()
	delay := e.send.delays[back[0].Body]
	e.send.mu.Unlock()
	if delay != 0 {
		t.Errorf("the run went back with a delay of %v, want none: a fresh invocation takes it now", delay)
	}
}
