package crawlstate

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// TestOverlappingCopiesOfTheDecidingCheckDecideOnce: two deliveries of one check message (one id,
// one seq), in two overlapping receives, both find the crawl drained and step with an end. The
// chain lets a check's own earlier delivery step again (it may have died before sending the next
// check), so only the guard on an existing end keeps the second from deciding the end again.
func TestOverlappingCopiesOfTheDecidingCheckDecideOnce(t *testing.T) {
	ctx := context.Background()
	for round := range 20 {
		s, _ := newStore(t)
		if err := s.MarkStarted(ctx, "c"); err != nil {
			t.Fatal(err)
		}
		events := []string{`{"copy":1}`, `{"copy":2}`}
		var wg sync.WaitGroup
		errs := make([]error, len(events))
		start := make(chan struct{})
		for i, ev := range events {
			wg.Go(func() {
				<-start
				_, errs[i] = s.StepCheck(ctx, "c", Step{Seq: 0, By: "m0", Event: ev})
			})
		}
		close(start)
		wg.Wait()
		var decided []string
		for i, err := range errs {
			switch {
			case err == nil:
				decided = append(decided, events[i])
			case !errors.Is(err, ErrStale):
				t.Fatalf("round %d: StepCheck: %v", round, err)
			}
		}
		if len(decided) != 1 {
			t.Fatalf("round %d: %d copies decided the end (%v), want exactly 1", round, len(decided), decided)
		}
		ch, err := s.ChecksOf(ctx, "c")
		if err != nil || ch.End != EndPending || ch.Event != decided[0] {
			t.Fatalf("round %d: the end is %q with %s (%v), want pending with %s", round, ch.End, ch.Event, err, decided[0])
		}
	}
}
