package crawlstate

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// testEraseAndMovePage: MovePage moves a fetched URL's page where its state is read from (its
// outcome), with the payload its revisit reuses, and the page stays parsed (its one-page parse
// message was marked under its old offset); Erase leaves nothing of a URL (item, outcome) and
// nothing else changed.
func testEraseAndMovePage(t *testing.T, tb table.Table) {
	ctx := context.Background()
	s := New(tb)
	crawl := crawlName(t)
	urls := []string{"http://a.test/1", "http://a.test/2"}
	keys := make([]string, len(urls))
	file := "pages/" + crawl + "/a.warc.gz"
	var outs []Outcome
	for i, u := range urls {
		keys[i] = urlnorm.Key(u)
		if res, _, err := s.AdmitIn(ctx, crawl, "G", keys[i], u, u, 0, "L"); err != nil || res != Admitted {
			t.Fatalf("AdmitIn %s = %v, %v", u, res, err)
		}
		p := &Page{WARCKey: file, Offset: int64(100 + 1000*i), Length: 900, FinalURL: u, Status: 200, FetchedAt: time.Now().UTC(),
			Unchanged: &message.Unchanged{Profile: "p", Payload: message.Ref{Key: "pages/prev/b.warc.gz", Offset: 700, Length: 800},
				URI: u, Date: time.Now().UTC(), Digest: "sha256:00", Crawl: "prev"}}
		outs = append(outs, Outcome{Key: keys[i], URL: u, State: Fetched, Prev: Queued, Page: p, Owner: "M"})
	}
	if got, err := s.ClaimGroup(ctx, crawl, "G", "M", nil, time.Minute, keys); err != nil || len(got) != len(keys) {
		t.Fatalf("ClaimGroup = %v, %v", got, err)
	}
	if _, err := s.Record(ctx, crawl, "G", outs); err != nil {
		t.Fatal(err)
	}
	kept, err := s.Get(ctx, crawl, keys[1])
	if err != nil || kept.Page == nil {
		t.Fatalf("Get = %+v, %v", kept, err)
	}
	if _, err := s.MarkMessageParsed(ctx, crawl, message.PageName(file, kept.Page.Offset)); err != nil {
		t.Fatal(err)
	}
	to := *kept.Page
	to.Offset, to.Length = 100, 900
	un := *to.Unchanged
	un.Payload.Offset = 0
	to.Unchanged = &un
	if err := s.MovePage(ctx, crawl, kept, to); err != nil {
		t.Fatal(err)
	}
	moved, err := s.Get(ctx, crawl, keys[1])
	if err != nil || moved.Page == nil || moved.Page.Offset != 100 || moved.Page.Length != 900 || moved.Page.WARCKey != file ||
		moved.State != Fetched || moved.Page.FinalURL != urls[1] || moved.Page.Unchanged == nil ||
		moved.Page.Unchanged.Payload != (message.Ref{Key: "pages/prev/b.warc.gz", Offset: 0, Length: 800}) {
		t.Errorf("after MovePage the URL is %+v (page %+v), %v; want fetched at 100+900 of its file, its payload at 0+800 of the earlier file",
			moved, moved.Page, err)
	}
	if parsed, err := s.PageParsed(ctx, crawl, moved); err != nil || !parsed {
		t.Errorf("after MovePage the page parsed under its one-page message's name is parsed: %v, %v; want true", parsed, err)
	}
	elsewhere := to
	elsewhere.Offset, elsewhere.Length = 5, 5
	if err := s.MovePage(ctx, crawl, kept, elsewhere); err == nil {
		t.Error("MovePage from a page that is no longer there: no error")
	}

	if err := s.Erase(ctx, crawl, keys[:1]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, crawl, keys[0]); !errors.Is(err, table.ErrNotFound) {
		t.Errorf("Get of an erased URL: %v, want not found", err)
	}
	err = EachInCrawl(ctx, tb, crawl, groupKind, func(sort string, it table.Item) error {
		for name := range it {
			if len(name) > 1 && name[1:] == shortKey(keys[0]) {
				t.Errorf("the group %s still holds %s of the erased URL", sort, name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if left, err := s.Get(ctx, crawl, keys[1]); err != nil || left.State != Fetched || left.Page == nil || left.Page.Offset != 100 {
		t.Errorf("the other URL after the erasure: %+v, %v; want it fetched, at its moved page", left, err)
	}
	if err := s.Erase(ctx, crawl, keys[:1]); err != nil {
		t.Errorf("Erase again: %v, want nothing to do", err)
	}
}
