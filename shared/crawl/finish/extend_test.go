package finish_test

import (
	"context"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/finish"
)

// extendedInTheTally is the crawl state with a seed file's extension run whole at a named step:
// after a check's tally has read every item, before the check decides. Its Links message is
// named, so a check that read the crawl after it waits for it; this one read the crawl before.
type extendedInTheTally struct {
	*crawlstate.Store
	t    *testing.T
	done bool
}

func (s *extendedInTheTally) DrainedStep(ctx context.Context, crawl string, basis int64, budget time.Duration) (crawlstate.TallyStep, error) {
	step, err := s.Store.DrainedStep(ctx, crawl, basis, budget)
	if err != nil || s.done {
		return step, err
	}
	s.done = true
	if _, err := s.BeginExtension(ctx, crawl, "v2"); err != nil {
		s.t.Fatal(err)
	}
	if err := s.NoteLinksSent(ctx, crawl, "seeds v2", []string{"new-seeds"}); err != nil {
		s.t.Fatal(err)
	}
	if err := s.EndExtension(ctx, crawl, "v2"); err != nil {
		s.t.Fatal(err)
	}
	return step, nil
}

// TestASeedFileExtendedDuringACheckHoldsTheEnd: a check whose tally found the crawl drained, while
// the crawl's seed file was extended behind its reads, decides no end, and sends the next check;
// that one finds the new Links message, and the end comes once it is admitted.
func TestASeedFileExtendedDuringACheckHoldsTheEnd(t *testing.T) {
	f := newFixture(t, 0)
	f.c.StallAfter = 100 * time.Hour
	st := &extendedInTheTally{Store: f.st, t: t}
	f.c.State = st
	f.check(t, 0, "m0")
	if !st.done {
		t.Fatal("the check did not tally: the extension was not injected")
	}
	if len(f.pub.ev) != 0 {
		t.Fatalf("the crawl ended with its new seeds on their way: %+v", f.pub.ev)
	}
	if got := f.checksSent(); len(got) != 1 || got[0] != 1 {
		t.Fatalf("checks sent %v; want check 1: the chain goes on", got)
	}
	f.now = f.now.Add(time.Minute)
	f.check(t, 1, "m1")
	if len(f.pub.ev) != 0 {
		t.Fatalf("the crawl ended with a Links message not admitted: %+v", f.pub.ev)
	}
	if err := f.st.MarkLinksAdmitted(context.Background(), crawl, []string{"new-seeds"}); err != nil {
		t.Fatal(err)
	}
	f.now = f.now.Add(time.Minute)
	f.check(t, 2, "m2")
	if len(f.pub.ev) != 1 || f.pub.ev[0].End != finish.EndDrained {
		t.Fatalf("events %+v once the new seeds were admitted; want the end", f.pub.ev)
	}
}
