package crawlstate

import (
	"context"
	"errors"
	"testing"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// testAnExtensionHoldsTheEnd: a deciding step is refused while an extension of the crawl is marked,
// and after one that ended since the check read the crawl item; it decides once the check has read
// the crawl as it is. A crawl whose end is decided is not extended, and says which version it took
// in last. Each write of an extension is also applied and sent again (its answer lost).
func testAnExtensionHoldsTheEnd(t *testing.T, tb table.Table) {
	ctx := context.Background()
	s, f, _ := faultStore(tb)
	crawl := crawlName(t)
	if err := s.MarkStarted(ctx, crawl); err != nil {
		t.Fatal(err)
	}
	read := func() Checks {
		t.Helper()
		ch, err := s.ChecksOf(ctx, crawl)
		if err != nil {
			t.Fatal(err)
		}
		return ch
	}
	before := read()
	replayNext(t, f, "update", CrawlKey(crawl))
	if ext, err := s.BeginExtension(ctx, crawl, "v2"); err != nil || ext.Ended {
		t.Fatalf("BeginExtension = %+v, %v; want the crawl marked", ext, err)
	}
	if _, err := s.BeginExtension(ctx, crawl, "v3"); !errors.Is(err, ErrExtending) {
		t.Fatalf("another version while v2 is taken in: %v, want ErrExtending", err)
	}
	if _, err := s.StepCheck(ctx, crawl, Step{Seq: 0, By: "c0", Event: `{"end":"drained"}`, Extended: read().Extended}); !errors.Is(err, ErrExtended) {
		t.Fatalf("a deciding step during the extension: %v, want ErrExtended", err)
	}
	replayNext(t, f, "update", CrawlKey(crawl))
	if err := s.EndExtension(ctx, crawl, "v2"); err != nil {
		t.Fatalf("EndExtension (replayed): %v", err)
	}
	if _, err := s.StepCheck(ctx, crawl, Step{Seq: 0, By: "c0", Event: `{"end":"drained"}`, Extended: before.Extended}); !errors.Is(err, ErrExtended) {
		t.Fatalf("a deciding step of a check that read the crawl before the extension: %v, want ErrExtended", err)
	}
	if ch := read(); ch.End != "" || ch.Seq != 0 || ch.Extended != "v2" || ch.Extending {
		t.Fatalf("after refused steps the crawl reads %+v; want no end, the chain at 0, extended by v2", ch)
	}
	ch, err := s.StepCheck(ctx, crawl, Step{Seq: 0, By: "c0", Event: `{"end":"drained"}`, Extended: read().Extended})
	if err != nil || ch.End != EndPending {
		t.Fatalf("a deciding step of a check that read the extended crawl = %+v, %v; want the end decided", ch, err)
	}
	if ok, err := s.SaveSeedProgress(ctx, crawl, SeedProgress{}, SeedProgress{Offset: 10, Version: "v2", Digest: "d"}); err != nil || !ok {
		t.Fatal(ok, err)
	}
	ext, err := s.BeginExtension(ctx, crawl, "v3")
	if err != nil || !ext.Ended || ext.Progress.Version != "v2" {
		t.Fatalf("BeginExtension of an ended crawl = %+v, %v; want Ended, and the version it took in last", ext, err)
	}
	if ch := read(); ch.Extending {
		t.Error("an ended crawl was marked extending")
	}
	stopped := crawl + "-stopped"
	if err := s.MarkStarted(ctx, stopped); err != nil {
		t.Fatal(err)
	}
	if err := s.SetRun(ctx, stopped, StoppedBy); err != nil {
		t.Fatal(err)
	}
	if ext, err := s.BeginExtension(ctx, stopped, "v2"); err != nil || !ext.Ended {
		t.Errorf("BeginExtension of a stopped crawl = %+v, %v; want Ended: its new seeds would end stopped", ext, err)
	}
	if _, err := s.BeginExtension(ctx, "no-such-crawl", "v1"); !errors.Is(err, ErrUnknownCrawl) {
		t.Errorf("BeginExtension of an unknown crawl: %v, want ErrUnknownCrawl", err)
	}
}
