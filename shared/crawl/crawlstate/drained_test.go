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

// drainedByScan is the work left as EachURL and PageParsed read it, one URL at a time: the oracle
// for what Drained counts of URLs and pages.
func drainedByScan(t *testing.T, s *Store, crawl string) Left {
	t.Helper()
	ctx := context.Background()
	var left Left
	err := s.EachURL(ctx, crawl, func(u URL) error {
		switch {
		case u.State == Queued:
			left.Queued++
		case u.State == Fetched:
			done, err := s.PageParsed(ctx, crawl, u)
			if err != nil {
				return err
			}
			if !done && u.Page != nil {
				left.Unparsed++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return left
}

// Drained counts the URLs left queued and the pages left unparsed as the URLs read one by one
// say, and the Links messages named sent (on a parse mark, or in a note) and not marked admitted;
// a parse mark from before marks named their Links messages names none.
func testDrainedCountsWhatIsLeft(t *testing.T, tb table.Table) {
	ctx := context.Background()
	s := New(tb)
	crawl := crawlName(t)
	admit := func(group string, n int) []string {
		t.Helper()
		var ks []string
		for i := range n {
			u := "http://" + group + ".test/" + string(rune('a'+i))
			k := urlnorm.Key(u)
			if res, _, err := s.AdmitIn(ctx, crawl, group, k, u, u, 0, "L"); err != nil || res != Admitted {
				t.Fatalf("AdmitIn %s = %v, %v", u, res, err)
			}
			ks = append(ks, k)
		}
		return ks
	}
	fileA, fileB := "pages/"+crawl+"/d/a.warc.gz", "pages/"+crawl+"/d/b.warc.gz"
	page := func(file string, off int64) *Page {
		return &Page{WARCKey: file, Offset: off, Length: 10, FinalURL: "http://x.test/", Status: 200, Msg: message.PartName(file, 0)}
	}
	g1, g2 := admit("g1", 4), admit("g2", 3)
	admit("g3", 2)
	for _, g := range []struct {
		name string
		keys []string
	}{{"g1", g1}, {"g2", g2}} {
		if _, err := s.ClaimGroup(ctx, crawl, g.name, "M"+g.name, nil, time.Minute, g.keys); err != nil {
			t.Fatal(err)
		}
	}
	// g1: two pages of file A (its message marked), one of file B (not marked), one failed; g2:
	// one page of file B whose one-page message is marked, one skipped, one still claimed; g3:
	// never claimed.
	if _, err := s.Record(ctx, crawl, "g1", []Outcome{
		{Key: g1[0], State: Fetched, Prev: Queued, Page: page(fileA, 0), Owner: "Mg1"},
		{Key: g1[1], State: Fetched, Prev: Queued, Page: page(fileA, 10), Owner: "Mg1"},
		{Key: g1[2], State: Fetched, Prev: Queued, Page: page(fileB, 0), Owner: "Mg1"},
		{Key: g1[3], State: Failed, Prev: Queued, Cause: errclass.Errorf(errclass.HTTP5xx, "status 503"), Owner: "Mg1"},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Record(ctx, crawl, "g2", []Outcome{
		{Key: g2[0], State: Fetched, Prev: Queued, Page: page(fileB, 10), Owner: "Mg2"},
		{Key: g2[1], State: Skipped, Prev: Queued, Cause: errclass.Errorf(errclass.Robots, "disallowed"), Owner: "Mg2"},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reject(ctx, crawl, urlnorm.Key("http://r.test/"), "http://r.test/", 1, errclass.Errorf(errclass.Scope, "out")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MarkMessageParsedLinks(ctx, crawl, message.PartName(fileA, 0), "", []string{"LinksA1", "LinksA2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MarkMessageParsedIn(ctx, crawl, message.PageName(fileB, 10), ""); err != nil { // an old mark: no names
		t.Fatal(err)
	}
	if err := s.NoteLinksSent(ctx, crawl, "seeds", []string{"Seeds1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkLinksAdmitted(ctx, crawl, []string{"LinksA1", "Other"}); err != nil {
		t.Fatal(err)
	}
	check := func(links int64) {
		t.Helper()
		c, left, err := s.Drained(ctx, crawl)
		if err != nil {
			t.Fatal(err)
		}
		want := drainedByScan(t, s, crawl)
		want.Links = links
		if left != want || want.Queued != 3 || want.Unparsed != 1 {
			t.Errorf("Drained left %+v; want %+v (3 queued: one claimed, two never; 1 unparsed: g1's page of file B)", left, want)
		}
		tally, err := s.Tally(ctx, crawl)
		if err != nil {
			t.Fatal(err)
		}
		if c.Seen != 10 || c.Fetched != 4 || c.Skipped != 2 || c.Failed != 1 || c.Seen != tally.Seen || c.Fetched != tally.Fetched ||
			len(c.GaveUp) != 0 || len(tally.GaveUp) != 1 || tally.GaveUp[0].Key != g1[3] || tally.GaveUp[0].URL != "http://g1.test/d" ||
			tally.GaveUp[0].Class != errclass.HTTP5xx {
			t.Errorf("Drained counted %+v, Tally %+v: want 10 seen, 4 fetched, 2 skipped, 1 failed (Tally lists http://g1.test/d)", c, tally)
		}
	}
	check(2) // LinksA2 and Seeds1
	// A second delivery of file A's message, which sent its links packed otherwise, finds the
	// mark written: its Links messages are named all the same.
	if done, err := s.MarkMessageParsedLinks(ctx, crawl, message.PartName(fileA, 0), "", []string{"LinksA1", "LinksA3"}); err != nil || done {
		t.Fatalf("a second mark = %v, %v; want false, nil", done, err)
	}
	check(3)
	if err := s.MarkLinksAdmitted(ctx, crawl, []string{"LinksA2", "Seeds1", "LinksA3"}); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkLinksAdmitted(ctx, crawl, []string{"LinksA2"}); err != nil { // a replay, or a redelivery
		t.Fatal(err)
	}
	check(0)
}

// Names beyond what one item holds go to notes, and count all the same.
func testManyLinksNamed(t *testing.T, tb table.Table) {
	ctx := context.Background()
	s := New(tb)
	crawl := crawlName(t)
	names := make([]string, 2*maxLinksPerItem+5)
	for i := range names {
		names[i] = "L" + urlnorm.Key("http://a.test/" + string(rune(i)))[:15]
	}
	if _, err := s.MarkMessageParsedLinks(ctx, crawl, "big", "", names); err != nil {
		t.Fatal(err)
	}
	_, left, err := s.Drained(ctx, crawl)
	if err != nil || left.Links != int64(len(names)) {
		t.Fatalf("Drained = %+v, %v; want %d links left", left, err, len(names))
	}
	if err := s.MarkLinksAdmitted(ctx, crawl, names[1:]); err != nil {
		t.Fatal(err)
	}
	if _, left, err = s.Drained(ctx, crawl); err != nil || left.Links != 1 {
		t.Fatalf("Drained = %+v, %v; want 1 links message left", left, err)
	}
}
