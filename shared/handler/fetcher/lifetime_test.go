package fetcher_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
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
