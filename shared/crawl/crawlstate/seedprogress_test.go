package crawlstate

import (
	"context"
	"testing"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// testSeedProgressMovesOnce: a seed file's checkpoint moves only from where it was read; the write
// applied with its answer lost is taken for done, and a second delivery's move from the old place
// is refused.
func testSeedProgressMovesOnce(t *testing.T, tb table.Table) {
	ctx := context.Background()
	s, f, _ := faultStore(tb)
	crawl := crawlName(t)
	if p, err := s.SeedProgress(ctx, crawl); err != nil || p != (SeedProgress{}) {
		t.Fatalf("a new crawl's progress = %+v, %v; want none", p, err)
	}
	first := SeedProgress{Offset: 65536, Line: 2000, Accepted: 1990, Errors: 10}
	replayNext(t, f, "update", CrawlKey(crawl))
	if ok, err := s.SaveSeedProgress(ctx, crawl, SeedProgress{}, first); err != nil || !ok {
		t.Fatalf("the first checkpoint, its answer lost = %v, %v; want it saved", ok, err)
	}
	second := SeedProgress{Offset: 131072, Line: 4000, Accepted: 3980, Errors: 20}
	if ok, err := s.SaveSeedProgress(ctx, crawl, SeedProgress{}, SeedProgress{Offset: 1}); err != nil || ok {
		t.Errorf("a move from the start after the first = %v, %v; want it refused", ok, err)
	}
	if ok, err := s.SaveSeedProgress(ctx, crawl, first, second); err != nil || !ok {
		t.Errorf("the second checkpoint = %v, %v", ok, err)
	}
	if ok, err := s.SaveSeedProgress(ctx, crawl, first, SeedProgress{Offset: 99}); err != nil || ok {
		t.Errorf("a stale move = %v, %v; want it refused", ok, err)
	}
	if p, err := s.SeedProgress(ctx, crawl); err != nil || p != second {
		t.Errorf("progress = %+v, %v; want %+v", p, err, second)
	}
}
