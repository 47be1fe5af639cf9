package finish_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/finish"
	"github.com/crawlstack/crawlstack/shared/port/table"
	"github.com/crawlstack/crawlstack/shared/port/table/tabletest"
)

// stepped is a fixture whose tally takes a step of two items a check (as a crawl too large for
// one check's budget takes several), through faults over the fixture's table.
func stepped(t *testing.T) (*fixture, *tallies, *tabletest.Faults) {
	t.Helper()
	f, _ := counted(t)
	faults := tabletest.NewFaults(f.scans)
	f.st = crawlstate.New(faults, crawlstate.WithClock(func() time.Time { return f.now }), crawlstate.WithRunCheck(-1),
		crawlstate.WithTallyStepItems(2))
	tl := &tallies{Store: f.st}
	f.c.State = tl
	return f, tl, faults
}

// endedURLs admits and skips n URLs: a crawl whose counters show nothing left.
func (f *fixture) endedURLs(t *testing.T, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		f.skipURL(t, f.admitOne(t, fmt.Sprintf("http://a.test/%d", i)))
	}
}

// oneGo is the crawl's tally in one go: the oracle of the tally in steps.
func (f *fixture) oneGo(t *testing.T) crawlstate.Counters {
	t.Helper()
	c, left, err := f.st.Drained(context.Background(), crawl)
	if err != nil || !left.Done() {
		t.Fatalf("Drained = %+v, %+v, %v; want the crawl drained", c, left, err)
	}
	return c
}

// TestTheEndWaitsForTheTallyInSteps: the crawl's counters show nothing left, and its tally takes
// several checks. Each check between two steps announces nothing and sends the next check; the end
// comes at the check whose step completes the tally, once, with the counts of the tally in one go.
func TestTheEndWaitsForTheTallyInSteps(t *testing.T) {
	f, tl, _ := stepped(t)
	f.endedURLs(t, 0, 3)
	want := f.oneGo(t)
	last := f.begin(t)
	for i := 0; len(f.pub.ev) == 0; i++ {
		if i > 40 {
			t.Fatalf("no end after %d checks (%d steps)", i, tl.steps.Load())
		}
		sent := len(f.checksSent())
		if !f.next(t, fmt.Sprintf("m%d", i), &last) {
			t.Fatalf("the chain stopped at check %d with the tally under way", i)
		}
		if len(f.pub.ev) == 0 && len(f.checksSent()) != sent+1 {
			t.Fatalf("check %d, between two steps of the tally, sent no next check", i)
		}
		if len(f.pub.ev) == 0 && tl.n.Load() != 0 {
			t.Fatalf("check %d: a tally completed and no end", i)
		}
	}
	if steps := tl.steps.Load(); steps < 3 || tl.n.Load() != 1 {
		t.Errorf("%d steps, %d tallies completed; want several steps of one tally", steps, tl.n.Load())
	}
	ev := f.pub.ev[0]
	if len(f.pub.ev) != 1 || ev.End != finish.EndDrained || ev.Counts.Seen != want.Seen || ev.Counts.Skipped != want.Skipped || want.Skipped != 3 {
		t.Errorf("events %+v; want one end with the tally in one go's counts %+v", f.pub.ev, want)
	}
	if f.next(t, "after", &last) {
		t.Error("a check was sent after the end")
	}
}

// TestCountersThatMoveBetweenStepsRestartTheTally: a URL admitted and ended between two steps
// moves the counters; the next step drops the saved tally and reads the crawl again from its first
// item, and the end, when it comes, counts the new URL. A paused crawl's check drops the saved
// tally too.
func TestCountersThatMoveBetweenStepsRestartTheTally(t *testing.T) {
	f, tl, _ := stepped(t)
	f.endedURLs(t, 0, 3)
	last := f.begin(t)
	f.next(t, "m0", &last)
	f.next(t, "m1", &last)
	if ch, err := f.st.ChecksOf(context.Background(), crawl); err != nil || !ch.Tallying || len(f.pub.ev) != 0 {
		t.Fatalf("after two steps: Tallying %v (%v), events %+v; want a tally under way", ch.Tallying, err, f.pub.ev)
	}
	f.endedURLs(t, 3, 1)
	want := f.oneGo(t)
	stepsBefore := tl.steps.Load()
	for i := 0; len(f.pub.ev) == 0; i++ {
		if i > 40 || !f.next(t, fmt.Sprintf("n%d", i), &last) {
			t.Fatalf("no end after %d more checks", i)
		}
	}
	if tl.dropped.Load() != 1 || tl.first.Load() != stepsBefore+1 {
		t.Errorf("%d steps dropped a saved tally, the first step after the URL was step %d of its tally; want one dropped, and it step 1",
			tl.dropped.Load(), tl.first.Load()-stepsBefore)
	}
	if ev := f.pub.ev[0]; ev.Counts.Seen != want.Seen || want.Seen != 4 || ev.Counts.Skipped != 4 {
		t.Errorf("the end counts %+v; want the 4 URLs of the tally in one go", ev.Counts)
	}

	// Paused between two steps: the check drops the saved tally.
	g, _, _ := stepped(t)
	g.endedURLs(t, 0, 3)
	last = g.begin(t)
	g.next(t, "m0", &last)
	if err := g.st.SetRun(context.Background(), crawl, crawlstate.Paused); err != nil {
		t.Fatal(err)
	}
	g.next(t, "m1", &last)
	if ch, err := g.st.ChecksOf(context.Background(), crawl); err != nil || ch.Tallying {
		t.Errorf("a paused crawl's check: Tallying %v (%v); want the saved tally dropped", ch.Tallying, err)
	}
}

// TestACheckThatDiesBetweenStepsGoesOn: a check whose step saved its tally and then failed (its
// next check not sent) is delivered again and goes on from the saved tally; one whose step failed
// while saving (a chunk not written) is delivered again and goes on from the step before. Either
// way the end comes once, with the counts of the tally in one go, and no step starts again.
func TestACheckThatDiesBetweenStepsGoesOn(t *testing.T) {
	for _, tt := range []struct {
		name string
		die  func(f *fixture, faults *tabletest.Faults)
		// fails: the check fails, to be delivered again; clean: no saved tally is left after the
		// end (a head written and its answer lost leaves the chunks it replaced, to expire).
		fails, clean bool
	}{
		{"after the save", func(f *fixture, _ *tabletest.Faults) { f.send.fail = 1 }, true, true},
		{"while saving", func(_ *fixture, faults *tabletest.Faults) {
			faults.Add(tabletest.Rule{Op: "put", Sort: "a#", Nth: 1, Fail: true})
		}, true, true},
		{"naming the save, its answer lost", func(_ *fixture, faults *tabletest.Faults) {
			faults.Add(tabletest.Rule{Op: "update", Key: crawlstate.CrawlKey(crawl), Nth: 1, Lost: true})
		}, true, false},
		{"naming the save, replayed", func(_ *fixture, faults *tabletest.Faults) {
			faults.Add(tabletest.Rule{Op: "update", Key: crawlstate.CrawlKey(crawl), Nth: 1})
		}, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, tl, faults := stepped(t)
			f.endedURLs(t, 0, 4)
			want := f.oneGo(t)
			last := f.begin(t)
			f.next(t, "m0", &last)
			f.send.mu.Lock()
			m, d := f.send.checks[len(f.send.checks)-1], f.send.delays[len(f.send.checks)-1]
			f.send.mu.Unlock()
			last = len(f.checksSent())
			f.now = f.now.Add(d)
			tt.die(f, faults)
			if err := f.c.Check(context.Background(), m, "m1"); (err != nil) != tt.fails {
				t.Fatalf("the check's error: %v; want one: %v", err, tt.fails)
			}
			if err := f.c.Check(context.Background(), m, "m1"); err != nil { // delivered again
				t.Fatalf("the check delivered again: %v", err)
			}
			for i := 0; len(f.pub.ev) == 0; i++ {
				if i > 40 || !f.next(t, fmt.Sprintf("n%d", i), &last) {
					t.Fatalf("no end after %d more checks", i)
				}
			}
			if tl.dropped.Load() != 0 || tl.n.Load() != 1 {
				t.Errorf("%d steps started the tally again, %d tallies completed; want none, and one", tl.dropped.Load(), tl.n.Load())
			}
			if ev := f.pub.ev[0]; len(f.pub.ev) != 1 || ev.Counts.Seen != want.Seen || ev.Counts.Skipped != 4 {
				t.Errorf("events %+v; want one end with the 4 URLs of the tally in one go", f.pub.ev)
			}
			if len(faults.Injected()) == 0 && tt.name != "after the save" {
				t.Error("no fault injected")
			}
			var saved []string
			for n := range crawlstate.Shards {
				_ = f.scans.Query(context.Background(), fmt.Sprintf("c#%s#%d", crawl, n), "a#", func(sort string, _ table.Item) error {
					saved = append(saved, sort)
					return nil
				})
			}
			if tt.clean && len(saved) != 0 {
				t.Errorf("saved tallies left after the end: %q", saved)
			}
		})
	}
}
