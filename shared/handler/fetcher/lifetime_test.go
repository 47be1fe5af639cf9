package fetcher_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/handler/fetcher"
)

// TestALoneURLWaitsInPlaceWhileTheBatchsRunLasts: a URL of another host, alone in its message,
// whose host is booked further ahead than MaxInlineWait, waits in place for its slot when the
// batch's run keeps the invocation past it: it is fetched in this batch, at its slot, and nothing
// goes back to the queue. Alone in its batch, the same URL goes back to wait for its slot there.
func TestALoneURLWaitsInPlaceWhileTheBatchsRunLasts(t *testing.T) {
	for _, withRun := range []bool{true, false} {
		name := "alone"
		if withRun {
			name = "beside a run"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, politeRuns)
			other := newSite(t)
			t.Cleanup(other.srv.Close)
			lone := e.recordOf("lone", other.srv.URL+"/about", 1) // another host's URL, alone in its message
			b, _ := url.Parse(other.srv.URL)
			// Another worker has booked the other host for 8 slots: its next one is 1.6 s
			// off, beyond what a URL alone waits in place for (MaxInlineWait).
			got, err := crawlstate.New(e.urls).ReserveSlots(context.Background(), b.Host, runInterval, 8, 0)
			if err != nil {
				t.Fatal(err)
			}
			due := got.Free
			recs := []events.SQSMessage{lone}
			paths := runPaths(15) // 3 s of the site's slots
			if withRun {
				recs = append([]events.SQSMessage{e.run("run", paths, make([]time.Time, len(paths)))}, recs...)
			}
			if failed := e.handle(recs...); len(failed) != 0 {
				t.Fatalf("BatchItemFailures = %v, want none", failed)
			}
			back := e.received(fetchQ)
			if !withRun {
				if n := other.hitsOf("/about"); n != 0 || len(back) != 1 {
					t.Fatalf("alone in its batch: requested %d times, %d messages back; want none, and the URL back to wait", n, len(back))
				}
				return
			}
			e.wantFetched(paths)
			if len(back) != 0 {
				t.Errorf("%d fetch messages went back, want none: the URL waits in place while the run lasts", len(back))
			}
			other.mu.Lock()
			at := other.at["/about"]
			other.mu.Unlock()
			if len(at) != 1 {
				t.Fatalf("the other host's page requested %d times, want once", len(at))
			}
			if early := due.Sub(at[0]); early > runInterval/2 {
				t.Errorf("the other host's page requested %v before its slot", early)
			}
		})
	}
}

// lonesBesideARun hands e's handler a run of 15 URLs (3 s of the site's slots) and, beside it, a
// lone URL of each of n other hosts, each booked 8 slots (1.6 s) ahead by another worker. It
// returns the other hosts, and how many messages went back to the queue.
func (e *env) lonesBesideARun(n int) ([]*site, int) {
	e.t.Helper()
	var others []*site
	var recs []events.SQSMessage
	paths := runPaths(15)
	recs = append(recs, e.run("run", paths, make([]time.Time, len(paths))))
	for i := range n {
		other := newSite(e.t)
		e.t.Cleanup(other.srv.Close)
		others = append(others, other)
		b, _ := url.Parse(other.srv.URL)
		if _, err := crawlstate.New(e.urls).ReserveSlots(context.Background(), b.Host, runInterval, 8, 0); err != nil {
			e.t.Fatal(err)
		}
		recs = append(recs, e.recordOf("lone-"+itoa(i), other.srv.URL+"/about", 1))
	}
	if failed := e.handle(recs...); len(failed) != 0 {
		e.t.Fatalf("BatchItemFailures = %v, want none", failed)
	}
	e.wantFetched(paths)
	return others, len(e.received(fetchQ))
}

// TestALoneURLWaitingBesideARunLeavesTheBatchItsRoom: a lone URL that waits in place for its slot
// beside a run gives its room in the memory budget back while it waits, so that the run goes on
// in a budget of one GET at a time; and at most a quarter of the batch's workers wait so, the
// other lone URLs going back to the queue as before. A minute's wait holding its room and its
// worker starved a realistic crawl's batch, whose other URLs then found too little time left.
func TestALoneURLWaitingBesideARunLeavesTheBatchItsRoom(t *testing.T) {
	t.Run("room", func(t *testing.T) {
		e := newEnv(t, func(c *fetcher.Config) {
			politeRuns(c)
			c.MemoryBudget, c.MaxDecodedBytes = 5<<19, 128<<10 // room for one GET's small hold
		})
		others, back := e.lonesBesideARun(1)
		if back != 0 {
			t.Fatalf("%d messages went back, want none: the lone URL waits in place", back)
		}
		e.site.mu.Lock()
		second := e.site.at["/run/1"]
		e.site.mu.Unlock()
		others[0].mu.Lock()
		lone := others[0].at["/about"]
		others[0].mu.Unlock()
		if len(second) != 1 || len(lone) != 1 {
			t.Fatalf("requested %d and %d times, want once each", len(second), len(lone))
		}
		if !second[0].Before(lone[0]) {
			t.Errorf("the run's second URL was requested %v after the lone URL, at its slot 1.6 s on: the lone URL held the room while it waited",
				second[0].Sub(lone[0]))
		}
	})
	t.Run("workers", func(t *testing.T) {
		e := newEnv(t, func(c *fetcher.Config) {
			politeRuns(c)
			c.Concurrency = 4 // one of them may wait beside the run
		})
		others, back := e.lonesBesideARun(2)
		took := others[0].hitsOf("/about") + others[1].hitsOf("/about")
		if took != 1 || back != 1 {
			t.Fatalf("%d lone URLs fetched in the batch and %d messages back; want one waiting in place, and one back", took, back)
		}
	})
}
