package finish_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/port/table/tabletest"
)

// meetAtStep is the crawl state whose StepCheck holds each caller until n have come: the copies
// of a check have all looked at the crawl before any of them steps.
type meetAtStep struct {
	*crawlstate.Store
	arrived chan struct{}
	all     chan struct{}
	once    sync.Once
	n       int
}

func (m *meetAtStep) StepCheck(ctx context.Context, crawl string, st crawlstate.Step) (crawlstate.Checks, error) {
	m.arrived <- struct{}{}
	if len(m.arrived) == m.n {
		m.once.Do(func() { close(m.all) })
	}
	select {
	case <-m.all:
	case <-time.After(30 * time.Second):
		return crawlstate.Checks{}, fmt.Errorf("only %d of %d copies came to StepCheck", len(m.arrived), m.n)
	}
	return m.Store.StepCheck(ctx, crawl, st)
}

// TestOverlappingCopiesOfTheDecidingCheckAnnounceOnce: one check message delivered twice, in two
// overlapping receives (one id), on a drained crawl. Both look, find it drained, and step with an
// end; one decides, the other finds the end decided and does nothing. The end is put once.
func TestOverlappingCopiesOfTheDecidingCheckAnnounceOnce(t *testing.T) {
	f := newFixture(t, time.Minute)
	f.legacy(t) // the end comes with check 1, after the quiet time
	f.check(t, 0, "m0")
	f.now = f.now.Add(time.Minute) // quiet: check 1 tallies and decides
	const copies = 2
	m := &meetAtStep{Store: f.st, arrived: make(chan struct{}, copies), all: make(chan struct{}), n: copies}
	c := *f.c
	c.State = m
	var wg sync.WaitGroup
	errs := make(chan error, copies)
	for range copies {
		wg.Go(func() {
			errs <- c.Check(context.Background(), &message.Check{Header: message.Header{Crawl: crawl}, Seq: 1}, "m1")
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a copy of the check: %v", err)
		}
	}
	f.pub.mu.Lock()
	defer f.pub.mu.Unlock()
	if len(f.pub.ev) != 1 {
		t.Fatalf("%d events put by two copies of the deciding check, want 1: %+v", len(f.pub.ev), f.pub.ev)
	}
}

// TestAReplayedDecisionIsAnnounced: the deciding check's step is applied and its answer lost, and
// the SDK sends it again. The check still announces the end, once: a check that took its own
// decision for a stale one would leave the end pending, with no check left to announce it.
func TestAReplayedDecisionIsAnnounced(t *testing.T) {
	f := newFixture(t, time.Minute)
	f.legacy(t) // the end comes with check 1, after the quiet time
	faults := tabletest.NewFaults(f.scans)
	f.st = crawlstate.New(faults, crawlstate.WithClock(func() time.Time { return f.now }), crawlstate.WithRunCheck(-1))
	f.c.State = f.st
	f.check(t, 0, "m0")
	f.now = f.now.Add(time.Minute) // quiet: check 1 decides
	faults.Add(tabletest.Rule{Op: "update", Key: crawlstate.CrawlKey(crawl), Nth: 1})
	f.check(t, 1, "m1")
	if len(faults.Injected()) != 1 {
		t.Fatalf("faults injected %v, want the deciding step replayed", faults.Injected())
	}
	if len(f.pub.ev) != 1 {
		t.Fatalf("%d events put, want the end announced once", len(f.pub.ev))
	}
}
