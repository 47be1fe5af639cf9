package crawlstate

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// testPageGoneEndsTheURLFailedOnce: a fetched URL whose page is gone ends failed, class page_gone,
// and moves from fetched to failed in the counters and in a tally alike, once: the write applied and
// its answer lost (the SDK's replay) counts once, a second delivery changes nothing, and a URL
// fetched into another file, or erased, is left as it is.
func testPageGoneEndsTheURLFailedOnce(t *testing.T, tb table.Table) {
	ctx := context.Background()
	s, f, _ := faultStore(tb)
	crawl := crawlName(t)
	urls := []string{"http://a.test/1", "http://b.test/2"}
	keys := admitted(t, s, crawl, "M", urls...)
	file, other := "pages/"+crawl+"/a.warc.gz", "pages/"+crawl+"/b.warc.gz"
	page := func(i int, file string) *Page {
		return &Page{WARCKey: file, Offset: 100, Length: 4567, FinalURL: urls[i], Status: 200,
			FetchedAt: time.Date(2026, 11, 29, 12, 0, 1, 0, time.UTC), Msg: message.PartName(file, 0)}
	}
	outs := []Outcome{
		{Key: keys[0], URL: urls[0], State: Fetched, Prev: Queued, Page: page(0, file), Owner: "M"},
		{Key: keys[1], URL: urls[1], State: Fetched, Prev: Queued, Page: page(1, other), Owner: "M"},
	}
	if lost, err := s.Record(ctx, crawl, "G", outs); err != nil || len(lost) != 0 {
		t.Fatalf("Record = %v, %v", lost, err)
	}
	gone := errors.New("read " + file + ": not found")
	replayNext(t, f, "update", groupKey(crawl, "G"))
	if ended, err := s.EndPageGone(ctx, crawl, keys[0], file, gone); err != nil || !ended {
		t.Fatalf("EndPageGone, its answer lost = %v, %v; want it ended", ended, err)
	}
	for i := range 2 { // a second delivery of the parse message, and the other URL's page elsewhere
		if ended, err := s.EndPageGone(ctx, crawl, keys[i], file, gone); err != nil || ended {
			t.Errorf("EndPageGone of %s again = %v, %v; want nothing done", urls[i], ended, err)
		}
	}
	u, err := s.Get(ctx, crawl, keys[0])
	if err != nil || u.State != Failed || u.Class != errclass.PageGone || u.Page != nil {
		t.Errorf("the URL is %s/%s (page %v), %v; want failed, page_gone, with no page", u.State, u.Class, u.Page, err)
	}
	if u, err := s.Get(ctx, crawl, keys[1]); err != nil || u.State != Fetched {
		t.Errorf("the URL of the other file is %s, %v; want it fetched still", u.State, err)
	}
	wantCounts(t, s, crawl, map[string]int64{"seen": 2, "fetched": 1, "failed": 1})
	c, err := s.Counters(ctx, crawl)
	if err != nil {
		t.Fatal(err)
	}
	if c.Classes[errclass.PageGone] != 1 || c.ParseErrors != 0 || c.Pending() != 0 {
		t.Errorf("page_gone %d, parse errors %d, pending %d; want 1, 0, 0", c.Classes[errclass.PageGone], c.ParseErrors, c.Pending())
	}
	if ended, err := s.EndPageGone(ctx, crawl, "0123456789abcdef0123", file, gone); err != nil || ended {
		t.Errorf("EndPageGone of a URL with no item = %v, %v; want nothing done", ended, err)
	}
}
