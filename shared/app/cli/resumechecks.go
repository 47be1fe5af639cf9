package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/finish"
)

// resumeChecks sends the crawl a drain check that takes its chain on (finish.Checker.Resume), for
// the stack's schedule function to run: a resumed crawl's chain then goes on at its normal pace
// instead of its paused one, and a stalled crawl's, which had stopped, goes on at all. It reports
// whether it sent one. Only the stack runs checks: crawl run sees the end of its own queues.
func resumeChecks(ctx context.Context, be *Backend, st *crawlstate.Store, crawl string) (bool, error) {
	res, err := findQueues(ctx, be)
	if err != nil {
		return false, err
	}
	if res.Schedule == "" {
		return false, errors.New("set SCHEDULE_QUEUE_URL (a stack output) to send the crawl's drain check")
	}
	c := &finish.Checker{State: st, Send: be.Queue, Queue: res.Schedule, Every: finish.DefaultEvery}
	sent, err := c.Resume(ctx, crawl)
	if err != nil {
		return false, fmt.Errorf("send the drain check of crawl %s: %w", crawl, err)
	}
	return sent, nil
}
