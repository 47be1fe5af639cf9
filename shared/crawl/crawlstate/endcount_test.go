package crawlstate

import (
	"context"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// countedLeft is the work the end's counters show left, after the store's buffered counts are
// written.
func countedLeft(t *testing.T, s *Store, crawl string) Left {
	t.Helper()
	ctx := context.Background()
	if err := s.WriteCounters(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := s.Counters(ctx, crawl)
	if err != nil {
		t.Fatal(err)
	}
	return c.Left()
}

// testEndCountersFollowTheTally: through a crawl's life (admissions, outcomes, a parse mark, notes
// and admitted marks, and their redeliveries) the end's counters show the work left that the exact
// tally (Drained, the oracle) finds, step by step.
func testEndCountersFollowTheTally(t *testing.T, tb table.Table) {
	ctx := context.Background()
	s := New(tb, WithBufferedCounters())
	crawl := crawlName(t)
	if err := s.MarkStarted(ctx, crawl); err != nil {
		t.Fatal(err)
	}
	step := func(what string, want Left) {
		t.Helper()
		got := countedLeft(t, s, crawl)
		_, tally, err := s.Drained(ctx, crawl)
		if err != nil {
			t.Fatal(err)
		}
		if got != want || tally != want {
			t.Errorf("%s: the counters show %+v left, the tally %+v; want %+v", what, got, tally, want)
		}
	}
	if ch, err := s.ChecksOf(ctx, crawl); err != nil || !ch.Counted {
		t.Fatalf("ChecksOf = %+v, %v; want a crawl that counts its end (MarkStarted)", ch, err)
	}
	if err := s.NoteLinksSent(ctx, crawl, "seeds s.txt", []string{"S1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.NoteLinksSent(ctx, crawl, "seeds s.txt", []string{"S1"}); err != nil { // the seed file read again
		t.Fatal(err)
	}
	step("a seed file's Links message named", Left{Links: 1})
	urls := []string{"http://a.test/1", "http://a.test/2", "http://a.test/3"}
	keys := make([]string, len(urls))
	for i, u := range urls {
		keys[i] = urlnorm.Key(u)
		if res, _, err := s.AdmitIn(ctx, crawl, "G", keys[i], u, u, 0, "S1"); err != nil || res != Admitted {
			t.Fatalf("AdmitIn %s = %v, %v", u, res, err)
		}
	}
	if err := s.MarkLinksAdmitted(ctx, crawl, []string{"S1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkLinksAdmitted(ctx, crawl, []string{"S1"}); err != nil { // the Links message delivered again
		t.Fatal(err)
	}
	step("its URLs admitted", Left{Queued: 3})
	if _, err := s.ClaimGroup(ctx, crawl, "G", "M", nil, time.Minute, keys); err != nil {
		t.Fatal(err)
	}
	file := "pages/" + crawl + "/d/a.warc.gz"
	msg := message.PartName(file, 0)
	page := func(off int64) *Page {
		return &Page{WARCKey: file, Offset: off, Length: 10, FinalURL: "http://a.test/", Status: 200, Msg: msg}
	}
	if _, err := s.Record(ctx, crawl, "G", []Outcome{
		{Key: keys[0], State: Fetched, Prev: Queued, Page: page(0), Owner: "M"},
		{Key: keys[1], State: Fetched, Prev: Queued, Page: page(10), Owner: "M"},
		{Key: keys[2], State: Skipped, Prev: Queued, Cause: errclass.Errorf(errclass.Robots, "disallowed"), Owner: "M"},
	}); err != nil {
		t.Fatal(err)
	}
	step("two pages fetched, one URL skipped", Left{Unparsed: 2})
	// Parse marks the message, naming the batch's Links messages; another message of the same
	// batch names them too, and a second delivery of the first finds its mark written.
	if done, err := s.MarkMessageParsedPages(ctx, crawl, msg, "", []string{"L1", "L2"}, 2); err != nil || !done {
		t.Fatalf("MarkMessageParsedPages = %v, %v; want true", done, err)
	}
	if _, err := s.MarkMessageParsedPages(ctx, crawl, "another message of the batch", "", []string{"L1", "L2"}, 0); err != nil {
		t.Fatal(err)
	}
	if done, err := s.MarkMessageParsedPages(ctx, crawl, msg, "", []string{"L1", "L2"}, 2); err != nil || done {
		t.Fatalf("a second mark = %v, %v; want false", done, err)
	}
	step("the pages parsed, two Links messages sent", Left{Links: 2})
	if err := s.MarkLinksAdmitted(ctx, crawl, []string{"L1"}); err != nil {
		t.Fatal(err)
	}
	step("one admitted", Left{Links: 1})
	if err := s.MarkLinksAdmitted(ctx, crawl, []string{"L2"}); err != nil {
		t.Fatal(err)
	}
	step("both admitted", Left{})
}

// testReplayedMarksCountOnce: a parse mark, a note and an admitted mark whose answers were lost,
// sent again by the SDK, find their own writes and count once; a mark is reported made.
func testReplayedMarksCountOnce(t *testing.T, tb table.Table) {
	ctx := context.Background()
	s, f, _ := faultStore(tb)
	crawl := crawlName(t)
	replayNext(t, f, "put", parsedKey(crawl, "m1"))
	if done, err := s.MarkMessageParsedPages(ctx, crawl, "m1", "", []string{"L1", "L2"}, 3); err != nil || !done {
		t.Fatalf("a replayed mark = %v, %v; want true", done, err)
	}
	replayNext(t, f, "put", linksItemKey(crawl, linksNoteLetter, "relink\x000\x00N1"))
	if err := s.NoteLinksSent(ctx, crawl, "relink", []string{"N1"}); err != nil {
		t.Fatal(err)
	}
	replayNext(t, f, "put", linksItemKey(crawl, linksAdmittedLetter, "admitted\x000\x00L1"+linksSep+"N1"))
	if err := s.MarkLinksAdmitted(ctx, crawl, []string{"L1", "N1"}); err != nil {
		t.Fatal(err)
	}
	c, err := s.Counters(ctx, crawl)
	if err != nil {
		t.Fatal(err)
	}
	if c.PagesParsed != 3 || c.LinksNamed != 3 || c.LinksAdmitted != 2 {
		t.Errorf("counters %d pages parsed, %d links named, %d admitted; want 3, 3, 2", c.PagesParsed, c.LinksNamed, c.LinksAdmitted)
	}
}

// The end's counters show no work below zero, whatever drift made them cross.
func TestCountersLeftIsNeverNegative(t *testing.T) {
	c := Counters{Seen: 1, Fetched: 2, Pages: 1, PagesParsed: 3, LinksNamed: 1, LinksAdmitted: 2}
	if got := c.Left(); got != (Left{}) || !got.Done() {
		t.Errorf("Left = %+v; want none", got)
	}
	c = Counters{Seen: 3, Fetched: 1, Pages: 1, LinksNamed: 2, LinksAdmitted: 1}
	if got, want := c.Left(), (Left{Queued: 2, Unparsed: 1, Links: 1}); got != want {
		t.Errorf("Left = %+v; want %+v", got, want)
	}
}
