package crawlstate

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// testRunState: a pause, a resume and a stop are written on the crawl item by one store and seen
// by another within its RunCheck, a stop is final, an unknown crawl is refused, and the URLs a
// stopped crawl ends are counted apart (in the counters and in Tally), none of them pending.
func testRunState(t *testing.T, tb table.Table) {
	ctx := context.Background()
	const crawl = "run-state"
	c := &clock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	admin, worker := New(tb, WithClock(c.now)), New(tb, WithClock(c.now))
	if err := admin.SetRun(ctx, crawl, Paused); !errors.Is(err, ErrUnknownCrawl) {
		t.Fatalf("pause of a crawl with no record: %v, want ErrUnknownCrawl", err)
	}
	if err := admin.MarkStarted(ctx, crawl); err != nil {
		t.Fatal(err)
	}
	read := func(want Run) {
		t.Helper()
		got, err := worker.RunOf(ctx, crawl)
		if err != nil || got != want {
			t.Fatalf("RunOf = %q, %v; want %q", got, err, want)
		}
	}
	read(Running)
	if err := admin.SetRun(ctx, crawl, Paused); err != nil {
		t.Fatal(err)
	}
	read(Running) // kept for DefaultRunCheck: no read per message
	c.t = c.t.Add(DefaultRunCheck)
	read(Paused)
	if err := admin.SetRun(ctx, crawl, Running); err != nil {
		t.Fatal(err)
	}
	c.t = c.t.Add(DefaultRunCheck)
	read(Running)

	// Two URLs: one fetched before the stop, one ended by it.
	for _, k := range []string{"a", "b"} {
		if _, err := worker.Admit(ctx, crawl, k, "http://a.test/"+k, "http://a.test/", 1, "L"); err != nil {
			t.Fatal(err)
		}
		if _, err := worker.Claim(ctx, crawl, k, "m-"+k, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := worker.Finish(ctx, crawl, "a", "m-a", Queued, Fetched, nil); !ok || err != nil {
		t.Fatalf("finish a: %v %v", ok, err)
	}
	if err := admin.SetRun(ctx, crawl, StoppedBy); err != nil {
		t.Fatal(err)
	}
	c.t = c.t.Add(DefaultRunCheck)
	read(StoppedBy)
	if ok, err := worker.Finish(ctx, crawl, "b", "m-b", Queued, Stopped, ErrCrawlStopped); !ok || err != nil {
		t.Fatalf("finish b stopped: %v %v", ok, err)
	}
	for _, to := range []Run{Running, Paused} {
		if err := admin.SetRun(ctx, crawl, to); !errors.Is(err, ErrStopped) {
			t.Errorf("SetRun(%s) of a stopped crawl: %v, want ErrStopped", to, err)
		}
	}
	if _, err := admin.Claim(ctx, crawl, "b", "other", time.Minute); !errors.Is(err, ErrClaimed) {
		t.Errorf("claim of a stopped URL: %v, want ErrClaimed (stopped is terminal)", err)
	}
	live, err := admin.Counters(ctx, crawl)
	if err != nil {
		t.Fatal(err)
	}
	tally, err := admin.Tally(ctx, crawl)
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]Counters{"counters": live, "tally": tally} {
		if got.Seen != 2 || got.Fetched != 1 || got.StoppedURLs != 1 || got.Pending() != 0 ||
			got.Classes[errclass.Stopped] != 1 || got.Stopped != StopUser {
			t.Errorf("%s = %+v: want 2 seen, 1 fetched, 1 stopped (class stopped), none pending, stopped by the user", name, got)
		}
	}
	crawls, err := admin.Crawls(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, cr := range crawls {
		if strings.Contains(cr.ID, "#") {
			t.Errorf("Crawls lists a counter shard: %q", cr.ID)
		}
		if cr.ID == crawl {
			found = true
			if cr.Run != StoppedBy || cr.Stopped != StopUser || cr.Started.IsZero() || cr.RunAt.IsZero() {
				t.Errorf("crawl record = %+v: want stopped by the user, with its start and the time of the stop", cr)
			}
		}
	}
	if !found {
		t.Errorf("Crawls = %+v: %s missing", crawls, crawl)
	}
}
