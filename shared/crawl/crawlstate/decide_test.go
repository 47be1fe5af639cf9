package crawlstate

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/crawlstack/crawlstack/shared/local/sqlite"
	"github.com/crawlstack/crawlstack/shared/port/table"
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

// TestAReplayedDecisionIsTheCallersOwn: the step that decides the end, applied and sent again by
// the SDK, is the caller's own decision, not a stale check's: a stale check announces nothing,
// and the crawl's end would stay pending with no check left to announce it. So is a replayed
// take-over of a pending end. A copy of the check with the same id, which did not write, is still
// stale.
func TestAReplayedDecisionIsTheCallersOwn(t *testing.T) {
	ctx := context.Background()
	s, f, _ := faultStore(sqliteTable(t))
	if err := s.MarkStarted(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	replayNext(t, f, "update", CrawlKey("c"))
	ch, err := s.StepCheck(ctx, "c", Step{Seq: 0, By: "m0", Event: `{"e":1}`})
	if err != nil || ch.End != EndPending || ch.Event != `{"e":1}` {
		t.Fatalf("replayed deciding StepCheck = %+v, %v; want the end decided", ch, err)
	}
	if _, err := s.StepCheck(ctx, "c", Step{Seq: 0, By: "m0", Event: `{"e":1}`}); !errors.Is(err, ErrStale) {
		t.Fatalf("a copy of the deciding check = %v, want ErrStale", err)
	}
	replayNext(t, f, "update", CrawlKey("c"))
	if err := s.TakeEnd(ctx, "c", "m0", "redriven"); err != nil {
		t.Fatalf("replayed TakeEnd: %v", err)
	}
	if err := s.TakeEnd(ctx, "c", "m0", "redriven"); !errors.Is(err, ErrStale) {
		t.Fatalf("a copy's TakeEnd after the take-over = %v, want ErrStale", err)
	}
}

// sqliteTable is a fresh embedded table.
func sqliteTable(t *testing.T) table.Table {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db.Table("t")
}
