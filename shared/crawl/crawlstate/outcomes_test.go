package crawlstate

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// testOutcomes: a fetch message's URLs, admitted in one group, are claimed in one write and
// recorded in another, their own items never written after their admission; Get and EachURL read
// the outcomes back as the URLs' states; a redelivery finds them done; a redriven failure is
// claimed again.
func testOutcomes(t *testing.T, tb table.Table) {
	ctx := context.Background()
	w := &writeCount{Table: tb}
	c := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	s := New(w, WithClock(c.now))
	crawl := crawlName(t)
	urls := []string{"http://a.test/1", "http://b.test/2", "http://c.test/3"}
	keys := make([]string, len(urls))
	for i, u := range urls {
		keys[i] = urlnorm.Key(u)
		if res, g, err := s.AdmitIn(ctx, crawl, "G", keys[i], u, u, 0, "L"); err != nil || res != Admitted || g != "G" {
			t.Fatalf("AdmitIn %s = %v, %q, %v; want admitted in G", u, res, g, err)
		}
	}
	before := make([]int, len(keys))
	for i, k := range keys {
		before[i] = w.writes(URLKey(crawl, k))
	}
	got, err := s.ClaimGroup(ctx, crawl, "G", "M", nil, time.Minute, keys)
	if err != nil || len(got) != 3 {
		t.Fatalf("ClaimGroup = %v, %v; want the 3 URLs", got, err)
	}
	if n := w.writes(groupKey(crawl, "G")); n != 1 {
		t.Errorf("claiming the message's 3 URLs took %d writes, want 1", n)
	}
	file := "pages/" + crawl + "/a.warc.gz"
	page := Page{WARCKey: file, Offset: 120, Length: 4567, FinalURL: urls[0], Status: 200, ContentType: "text/html",
		FetchedAt: time.Date(2026, 11, 29, 12, 0, 1, 123456789, time.UTC), Msg: message.PartName(file, 0)}
	redirected := page
	redirected.FinalURL, redirected.Msg = "http://a.test/moved", message.PageName(file, 120)
	outs := []Outcome{
		{Key: keys[0], URL: urls[0], State: Fetched, Prev: Queued, Page: &page, Owner: "M"},
		{Key: keys[1], URL: urls[1], State: Skipped, Prev: Queued, Cause: errclass.Errorf(errclass.Robots, "disallowed"), Owner: "M"},
		{Key: keys[2], URL: urls[2], State: Failed, Prev: Queued, Cause: errclass.Errorf(errclass.HTTP5xx, "status 503"), Redrivable: true, Owner: "M"},
	}
	if lost, err := s.Record(ctx, crawl, "G", outs); err != nil || len(lost) != 0 {
		t.Fatalf("Record = %v, %v", lost, err)
	}
	if n := w.writes(groupKey(crawl, "G")); n != 2 {
		t.Errorf("the message's claim and outcomes took %d writes, want 2", n)
	}
	for i, k := range keys {
		if n := w.writes(URLKey(crawl, k)) - before[i]; n != 0 {
			t.Errorf("claiming and recording %s wrote its URL item %d times, want 0", urls[i], n)
		}
	}
	check := func(how string, got map[string]URL) {
		t.Helper()
		if u := got[keys[0]]; u.State != Fetched || u.Page == nil || !reflect.DeepEqual(*u.Page, page) {
			t.Errorf("%s: %s = %s %+v, want fetched %+v", how, urls[0], u.State, u.Page, page)
		}
		if u := got[keys[1]]; u.State != Skipped || u.Class != errclass.Robots || u.Detail == "" || u.Page != nil {
			t.Errorf("%s: %s = %s/%s %q, want skipped/robots", how, urls[1], u.State, u.Class, u.Detail)
		}
		if u := got[keys[2]]; u.State != Failed || u.Class != errclass.HTTP5xx {
			t.Errorf("%s: %s = %s/%s, want failed/http_5xx", how, urls[2], u.State, u.Class)
		}
	}
	check("Get", getEach(t, s, crawl, keys))
	byScan := map[string]URL{}
	if err := s.EachURL(ctx, crawl, func(u URL) error { byScan[u.Key] = u; return nil }); err != nil {
		t.Fatal(err)
	}
	check("EachURL", byScan)
	cnt, err := s.Counters(ctx, crawl)
	if err != nil || cnt.Fetched != 1 || cnt.Skipped != 1 || cnt.Failed != 1 || cnt.Pending() != 0 {
		t.Errorf("counters = %+v, %v; want 1 fetched, 1 skipped, 1 failed, none pending", cnt, err)
	}
	// Admitting a URL again finds it done: known, in its group.
	if res, g, err := s.AdmitIn(ctx, crawl, "other", keys[0], urls[0], urls[0], 0, "L2"); err != nil || res != Known || g != "G" {
		t.Errorf("AdmitIn of a fetched URL = %v, %q, %v; want known, in G", res, g, err)
	}

	// The same message delivered again finds its URLs done.
	if got, err := s.ClaimGroup(ctx, crawl, "G", "M", nil, time.Minute, keys[:2]); err != nil || len(got) != 0 {
		t.Errorf("a redelivery claimed URLs its message recorded: %v, %v", got, err)
	}
	// A failure that went to the DLQ is claimed again by its redriven message, whatever its id.
	got, err = s.ClaimGroup(ctx, crawl, "G", "R", nil, time.Minute, keys)
	if err != nil || len(got) != 1 || got[keys[2]] != Failed {
		t.Fatalf("the redriven message's claim = %v, %v; want only the failed URL, as failed", got, err)
	}
	if lost, err := s.Record(ctx, crawl, "G", []Outcome{{Key: keys[2], URL: urls[2], State: Fetched, Prev: Failed,
		Page: &redirected, Owner: "R"}}); err != nil || len(lost) != 0 {
		t.Fatalf("Record after the redrive = %v, %v", lost, err)
	}
	u, err := s.Get(ctx, crawl, keys[2])
	if err != nil || u.State != Fetched || !reflect.DeepEqual(*u.Page, redirected) {
		t.Errorf("after the redrive, Get = %s %+v, %v; want fetched %+v", u.State, u.Page, err, redirected)
	}
	if cnt, _ := s.Counters(ctx, crawl); cnt.Fetched != 2 || cnt.Failed != 0 {
		t.Errorf("counters after the redrive = %+v, want 2 fetched, none failed", cnt)
	}
}

// testTakenOverURLIsNotRecordedByItsOldOwner: a claim whose lease ran out is taken over, and the
// old owner, still at work, can no longer record the URL (nor count it); it records the others. A
// message re-queued by the owner (naming it in Prev) takes its claim over while it is live.
func testTakenOverURLIsNotRecordedByItsOldOwner(t *testing.T, tb table.Table) {
	ctx := context.Background()
	c := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	s := New(tb, WithClock(c.now))
	crawl := crawlName(t)
	slow, other := urlnorm.Key("http://a.test/slow"), urlnorm.Key("http://a.test/other")
	for _, k := range []string{slow, other} {
		s.AdmitIn(ctx, crawl, "G", k, "http://a.test/"+k, "http://a.test/", 0, "L")
	}
	if got, err := s.ClaimGroup(ctx, crawl, "G", "A", nil, time.Minute, []string{slow, other}); err != nil || len(got) != 2 {
		t.Fatalf("A's claim = %v, %v", got, err)
	}
	if got, err := s.ClaimGroup(ctx, crawl, "G", "B", nil, time.Minute, []string{slow}); err != nil || len(got) != 0 {
		t.Fatalf("B claimed a live lease: %v, %v", got, err)
	}
	c.t = c.t.Add(2 * time.Minute)
	if got, err := s.ClaimGroup(ctx, crawl, "G", "B", nil, time.Minute, []string{slow}); err != nil || len(got) != 1 {
		t.Fatalf("B could not take over an expired lease: %v, %v", got, err)
	}
	lost, err := s.Record(ctx, crawl, "G", []Outcome{
		{Key: slow, State: Fetched, Prev: Queued, Page: &Page{WARCKey: "pages/a.warc.gz", Length: 1}, Owner: "A"},
		{Key: other, State: Skipped, Prev: Queued, Cause: errclass.Errorf(errclass.Robots, "no"), Owner: "A"},
	})
	if err != nil || !reflect.DeepEqual(lost, []string{slow}) {
		t.Fatalf("A's Record = %v, %v; want the slow URL lost", lost, err)
	}
	if u, _ := s.Get(ctx, crawl, slow); u.State != Queued || u.Owner != ownerTag("B") {
		t.Errorf("the taken-over URL = %s owned by %q, want queued, B's", u.State, u.Owner)
	}
	if u, _ := s.Get(ctx, crawl, other); u.State != Skipped {
		t.Errorf("A's other URL = %s, want skipped", u.State)
	}
	if cnt, _ := s.Counters(ctx, crawl); cnt.Fetched != 0 || cnt.Skipped != 1 {
		t.Errorf("counters = %+v, want only A's skip", cnt)
	}
	// B re-queues the URL to wait: the new message C names B, and takes the live claim over; a
	// message D that names nobody does not.
	if got, err := s.ClaimGroup(ctx, crawl, "G", "D", []string{"X"}, time.Minute, []string{slow}); err != nil || len(got) != 0 {
		t.Errorf("D took B's live claim: %v, %v", got, err)
	}
	if got, err := s.ClaimGroup(ctx, crawl, "G", "C", []string{"B"}, time.Minute, []string{slow}); err != nil || len(got) != 1 {
		t.Fatalf("C, re-queued by B, could not take its claim: %v, %v", got, err)
	}
	if lost, err := s.Record(ctx, crawl, "G", []Outcome{{Key: slow, State: Fetched, Prev: Queued,
		Page: &Page{WARCKey: "pages/b.warc.gz", Length: 1}, Owner: "B"}}); err != nil || len(lost) != 1 {
		t.Errorf("B recorded a URL whose claim passed to C: %v, %v", lost, err)
	}
	if ok, err := s.FinishFetched(ctx, crawl, slow, "C", Queued, Page{WARCKey: "pages/c.warc.gz", Length: 1}); !ok || err != nil {
		t.Fatalf("C's finish = %v, %v", ok, err)
	}
	if u, _ := s.Get(ctx, crawl, slow); u.State != Fetched || u.Page.WARCKey != "pages/c.warc.gz" {
		t.Errorf("after C's finish: %s %+v, want fetched from C's file", u.State, u.Page)
	}
	// A URL recorded before its lease ran out is done, not taken over.
	c.t = c.t.Add(2 * time.Minute)
	if _, err := s.Claim(ctx, crawl, other, "E", time.Minute); !errors.Is(err, ErrClaimed) {
		t.Errorf("a recorded URL was taken over once its lease ran out: %v", err)
	}
}

// testTallyReadsEachURLAsGetDoes: Tally, which holds only the states, classes and details of its
// groups' outcomes, counts every kind of URL as Get reads each one: fetched, skipped and failed in
// their groups, claimed and not yet recorded, queued and never claimed, skipped before its send,
// rejected at admission; and a full EachURL reads the same state, class and detail of each.
func testTallyReadsEachURLAsGetDoes(t *testing.T, tb table.Table) {
	ctx := context.Background()
	s := New(tb)
	crawl := crawlName(t)
	var keys []string
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
		keys = append(keys, ks...)
		return ks
	}
	g1, g2 := admit("g1", 3), admit("g2", 4)
	if _, err := s.ClaimGroup(ctx, crawl, "g1", "M", nil, time.Minute, g1); err != nil {
		t.Fatal(err)
	}
	file := "pages/" + crawl + "/a.warc.gz"
	page := Page{WARCKey: file, Offset: 1, Length: 2, FinalURL: "http://g1.test/a", Status: 200, Msg: message.PartName(file, 0)}
	if _, err := s.Record(ctx, crawl, "g1", []Outcome{
		{Key: g1[0], URL: "http://g1.test/a", State: Fetched, Prev: Queued, Page: &page, Owner: "M"},
		{Key: g1[1], URL: "http://g1.test/b", State: Skipped, Prev: Queued, Cause: errclass.Errorf(errclass.Robots, "disallowed by rule 3"), Owner: "M"},
		{Key: g1[2], URL: "http://g1.test/c", State: Failed, Prev: Queued, Cause: errclass.Errorf(errclass.HTTP5xx, "status 503"), Redrivable: true, Owner: "M"},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ClaimGroup(ctx, crawl, "g2", "N", nil, time.Minute, g2[:1]); err != nil {
		t.Fatal(err)
	}
	if err := s.SkipQueued(ctx, crawl, "g2", g2[2], errclass.Errorf(errclass.OptedOut, "opted out")); err != nil {
		t.Fatal(err)
	}
	rejected := urlnorm.Key("http://r.test/")
	if _, err := s.Reject(ctx, crawl, rejected, "http://r.test/", 1, errclass.Errorf(errclass.Robots, "robots.txt")); err != nil {
		t.Fatal(err)
	}
	keys = append(keys, rejected)

	want := Counters{Classes: map[errclass.Class]int64{}}
	byGet := getEach(t, s, crawl, keys)
	for _, u := range byGet {
		want.Seen++
		switch u.State {
		case Fetched:
			want.Fetched++
		case Skipped:
			want.Skipped++
		case Failed:
			want.Failed++
		}
		if u.State.Terminal() && u.Class != "" {
			want.Classes[u.Class]++
		}
	}
	if want.Fetched != 1 || want.Skipped != 3 || want.Failed != 1 || want.Seen != 8 {
		t.Fatalf("Get read %+v; the test wants 1 fetched, 3 skipped, 1 failed of 8", want)
	}
	got, err := s.Tally(ctx, crawl)
	if err != nil {
		t.Fatal(err)
	}
	if got.Seen != want.Seen || got.Fetched != want.Fetched || got.Skipped != want.Skipped || got.Failed != want.Failed ||
		got.Pending() != 3 || !reflect.DeepEqual(got.Classes, want.Classes) {
		t.Errorf("Tally = %+v (pending %d), want %+v (pending 3: one claimed, two never claimed)", got, got.Pending(), want)
	}
	if len(got.GaveUp) != 1 || got.GaveUp[0].URL != "http://g1.test/c" || got.GaveUp[0].Class != errclass.HTTP5xx ||
		got.GaveUp[0].Detail != byGet[g1[2]].Detail || got.GaveUp[0].Detail == "" {
		t.Errorf("Tally's GaveUp = %+v, want http://g1.test/c with its class and detail %q", got.GaveUp, byGet[g1[2]].Detail)
	}
	seen := 0
	if err := s.EachURL(ctx, crawl, func(u URL) error {
		seen++
		g := byGet[u.Key]
		if u.State != g.State || u.Class != g.Class || u.Detail != g.Detail || u.Owner != g.Owner || (u.Page == nil) != (g.Page == nil) {
			t.Errorf("EachURL read %s as %s/%s %q owner %q page %v; Get as %s/%s %q owner %q page %v",
				u.URL, u.State, u.Class, u.Detail, u.Owner, u.Page, g.State, g.Class, g.Detail, g.Owner, g.Page)
		}
		return nil
	}); err != nil || seen != len(keys) {
		t.Errorf("EachURL read %d URLs, %v; want %d", seen, err, len(keys))
	}
}

// getEach reads each of the crawl's keys with Get.
func getEach(t *testing.T, s *Store, crawl string, keys []string) map[string]URL {
	t.Helper()
	byGet := map[string]URL{}
	for _, k := range keys {
		u, err := s.Get(context.Background(), crawl, k)
		if err != nil {
			t.Fatal(err)
		}
		byGet[k] = u
	}
	return byGet
}
