package e2etest

import (
	"context"
	"net/url"
	"time"

	"github.com/crawlstack/crawlstack/shared/app/pipeline"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
)

// The run state scenarios: a crawl paused and resumed, and a crawl stopped, while the runner runs.
// The run state is set by a store of its own, as `crawl pause | resume | stop` in another process
// sets it, and the handlers read it for every batch (RunCheck below 0).

// runStateConfig is the harness's configuration with the run state read for every batch and a
// paused crawl's messages looked at again every second.
func (h *Harness) runStateConfig() pipeline.Config {
	cfg := h.Config()
	cfg.RunCheck, cfg.PauseWait = -1, time.Second
	return cfg
}

// runInBackground starts a crawl of the site and runs it until it drains; the returned channel
// gives the runner's error.
func (h *Harness) runInBackground(cfg pipeline.Config, ports pipeline.Ports, concurrency int) (string, <-chan error) {
	h.T.Helper()
	ctx := context.Background()
	crawl, err := h.Start(ctx, h.Res, "seeds.txt", []byte(h.Site.URL+"\n"))
	if err != nil {
		h.T.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx, crawl, cfg, ports, h.Queue, concurrency) }()
	return crawl, done
}

// waitUntil polls cond until it holds, failing the test with what after the harness's timeout.
func (h *Harness) waitUntil(what string, cond func() bool) {
	h.T.Helper()
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			h.T.Fatalf("waited %v for %s", timeout, what)
		}
		PollPause()
	}
}

// setRun sets the crawl's run state from a store apart from the handlers'.
func (h *Harness) setRun(crawl string, to crawlstate.Run) {
	h.T.Helper()
	if err := crawlstate.New(h.Table).SetRun(context.Background(), crawl, to); err != nil {
		h.T.Fatalf("set crawl %s %s: %v", crawl, to, err)
	}
}

// CheckPauseResume pauses a crawl once it has fetched some pages, proves that its fetch messages
// wait in the queue (sent back delayed, again and again, never reaching the dead-letter queue)
// while the site serves no page, then resumes it: the crawl ends with nothing lost and no page
// fetched twice.
func (h *Harness) CheckPauseResume(concurrency int) {
	t := h.T
	t.Helper()
	ports := h.Ports()
	sent := &CountingSender{Sender: h.Queue, Queue: h.Res.Fetch, Slow: h.Res.FetchSlow}
	ports.Queue = sent
	crawl, done := h.runInBackground(h.runStateConfig(), ports, concurrency)
	h.waitUntil("the first pages", func() bool { return h.Site.Fetched() >= 5 })
	h.setRun(crawl, crawlstate.Paused)
	// The site's own port has no politeness waits (HostRPS 0): every delayed fetch message is a
	// paused one sent back to wait. Once some have waited and no URL is held by a worker, whatever
	// was in flight when the pause was set is done.
	st := crawlstate.New(h.Table)
	h.waitUntil("paused messages sent back and no URL held", func() bool {
		return sent.Delayed.Load() >= 10 && h.heldURLs(st, crawl) == 0
	})
	served, waited := h.Site.Fetched(), sent.Delayed.Load()
	// Each paused message comes back after a second: twice as many holds means every message
	// still queued has come back at least once more, its receive count starting afresh.
	h.waitUntil("paused messages sent back again", func() bool { return sent.Delayed.Load() >= 2*waited })
	if got := h.Site.Fetched(); got != served {
		t.Errorf("the site served %d pages while the crawl was paused (%d before)", got-served, served)
	}
	if served >= h.Site.Pages {
		t.Fatalf("the whole site (%d pages) was fetched before the pause: nothing was paused", served)
	}
	t.Logf("paused after %d of %d pages; %d paused messages sent back to wait", served, h.Site.Pages, sent.Delayed.Load())
	h.setRun(crawl, crawlstate.Running)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	h.CheckNothingLost(crawl)
	if r := h.Site.Repeats(); len(r) != 0 {
		t.Errorf("pages fetched more than once: %v", r)
	}
}

// heldURLs counts the crawl's queued URLs that a worker holds (claimed, not yet done).
func (h *Harness) heldURLs(st *crawlstate.Store, crawl string) int {
	h.T.Helper()
	n := 0
	if err := st.EachURL(context.Background(), crawl, func(u crawlstate.URL) error {
		if u.State == crawlstate.Queued && u.Owner != "" {
			n++
		}
		return nil
	}); err != nil {
		h.T.Fatal(err)
	}
	return n
}

// CheckStop stops a crawl once it has fetched some pages and lets the runner drain it: every URL
// ends in a terminal state, every page the site served is recorded fetched and has its record,
// no URL ended stopped was ever requested, no page was fetched twice, the counters match the
// items, and no message reached a dead-letter queue.
func (h *Harness) CheckStop(concurrency int) {
	t := h.T
	t.Helper()
	crawl, done := h.runInBackground(h.runStateConfig(), h.Ports(), concurrency)
	h.waitUntil("the first pages", func() bool { return h.Site.Fetched() >= 5 })
	h.setRun(crawl, crawlstate.StoppedBy)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st := crawlstate.New(h.Table)
	tally, err := st.Tally(ctx, crawl)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped crawl: %+v", tally)
	if tally.Pending() != 0 || tally.Failed != 0 || tally.Fetched != int64(h.Site.Fetched()) ||
		tally.Fetched >= int64(h.Site.Pages) || tally.Stopped != crawlstate.StopUser {
		t.Errorf("tally %+v: want nothing pending or failed, the %d pages the site served fetched (fewer than its %d), stopped by the user",
			tally, h.Site.Fetched(), h.Site.Pages)
	}
	recs := h.Records(crawl)
	if err := st.EachURL(ctx, crawl, func(u crawlstate.URL) error {
		switch u.State {
		case crawlstate.Stopped:
			if p, err := url.Parse(u.URL); err != nil || h.Site.Hits(p.Path) != 0 {
				t.Errorf("url %s ended stopped but the site served it (%v)", u.URL, err)
			}
		case crawlstate.Fetched:
			if !recs[u.URL] {
				t.Errorf("url %s was fetched but has no record", u.URL)
			}
		case crawlstate.Queued:
			t.Errorf("url %s is still queued", u.URL)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	live, err := st.Counters(ctx, crawl)
	if err != nil {
		t.Fatal(err)
	}
	if live.Seen != tally.Seen || live.Fetched != tally.Fetched || live.StoppedURLs != tally.StoppedURLs {
		t.Errorf("live counters %+v differ from the items %+v", live, tally)
	}
	// The stop cut the crawl short: URLs queued then ended stopped, or links found then were not
	// admitted (counted, not recorded). The class stopped counts the URLs alone, so that the counts
	// a person reads of a stop agree: the counters' and the items'.
	if tally.StoppedURLs+live.StopRefused == 0 {
		t.Errorf("counters %+v, items %+v: want URLs ended stopped or links refused for the stop", live, tally)
	}
	if live.Classes[errclass.Stopped] != tally.Classes[errclass.Stopped] || tally.Classes[errclass.Stopped] != tally.StoppedURLs {
		t.Errorf("class stopped: %d counted, %d in the items, %d URLs ended stopped: want them equal",
			live.Classes[errclass.Stopped], tally.Classes[errclass.Stopped], tally.StoppedURLs)
	}
	if r := h.Site.Repeats(); len(r) != 0 {
		t.Errorf("pages fetched more than once: %v", r)
	}
	h.CheckDLQs(map[string]int{})
}
