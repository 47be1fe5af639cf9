package e2etest

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/retry"
)

// CheckRetryPolicyPerCrawl crawls the site from a spec whose retry section sets its own tries per
// class, on a stack that sets one class's tries too (CRAWL_RETRY_CLASSES): page 1 never answers
// (timeout), page 2 answers 500 (http_5xx), page 3 answers 429 with a Retry-After it cannot use
// (http_429). Each bad page is requested as often as its class's curve says, the spec's or the
// stack's, and ends failed with its class; every other page is fetched once, and no DLQ holds
// anything.
func (h *Harness) CheckRetryPolicyPerCrawl(concurrency int) {
	t := h.T
	t.Helper()
	bad := map[int]struct {
		fault Fault
		class errclass.Class
		tries int
	}{
		1: {Dead, errclass.Timeout, 3},          // the spec's class curve
		2: {Always500, errclass.HTTP5xx, 2},     // the spec's class curve
		3: {BadRetryAfter, errclass.HTTP429, 1}, // the stack's class curve, which the spec leaves
	}
	for i, b := range bad {
		h.Site.Bad(i, b.fault)
	}
	cfg := h.Config()
	cfg.MaxTries, cfg.RetryWait, cfg.FetchTimeout = 4, time.Second, time.Second
	cfg.RetryClasses = map[errclass.Class]retry.Curve{errclass.HTTP429: {Tries: 1}}
	spec := fmt.Sprintf("version: 1\nseeds:\n  - %s\nretry:\n  default: {wait: 10ms}\n  classes:\n    timeout: {tries: 3}\n    http_5xx: {tries: 2}\n",
		strings.Join(h.Site.PageURLs(), "\n  - "))
	ctx := context.Background()
	crawl, err := h.Start(ctx, h.Res, "retries.yaml", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Run(ctx, crawl, cfg, h.Ports(), h.Queue, concurrency); err != nil {
		t.Fatal(err)
	}
	for i, b := range bad {
		if n := h.Site.BadHits(i); n != b.tries {
			t.Errorf("bad page %d (%s) was requested %d times, want %d", i, b.class, n, b.tries)
		}
	}
	states := map[crawlstate.State]int{}
	if err := crawlstate.New(h.Table).EachURL(ctx, crawl, func(u crawlstate.URL) error {
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
	if states[crawlstate.Fetched] != h.Site.Pages-len(bad) || states[crawlstate.Failed] != len(bad) {
		t.Errorf("items by state = %v, want %d fetched and %d failed", states, h.Site.Pages-len(bad), len(bad))
	}
	if r := h.Site.Repeats(); len(r) != 0 {
		t.Errorf("pages fetched twice: %v", r)
	}
	h.CheckDLQs(map[string]int{})
}
