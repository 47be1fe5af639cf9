package crawlstate

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/port/table"
	"github.com/crawlstack/crawlstack/shared/port/table/tabletest"
)

// The writes of the crawl state, each applied and then sent again, as the SDK's retryer sends a
// write whose answer was lost (tabletest.Faults): each must recognise its own earlier success
// (DESIGN invariant 10), and count once.

// faultStore is a store on tb behind a Faults with no rules yet, and its clock.
func faultStore(tb table.Table) (*Store, *tabletest.Faults, *clock) {
	f := tabletest.NewFaults(tb)
	c := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	return New(f, WithClock(c.now)), f, c
}

// replayNext makes the next write of op to the key replayed, and checks at the end of the test
// that it was.
func replayNext(t *testing.T, f *tabletest.Faults, op string, key table.Key) {
	t.Helper()
	before := len(f.Injected())
	f.Add(tabletest.Rule{Op: op, Key: key, Nth: 1})
	t.Cleanup(func() {
		if len(f.Injected()) == before {
			t.Errorf("no %s of %s was replayed", op, key)
		}
	})
}

// admitted admits the URLs in group G by the message L, and claims them for owner.
func admitted(t *testing.T, s *Store, crawl, owner string, urls ...string) []string {
	t.Helper()
	ctx := context.Background()
	keys := make([]string, len(urls))
	for i, u := range urls {
		keys[i] = urlnorm.Key(u)
		if res, _, err := s.AdmitIn(ctx, crawl, "G", keys[i], u, u, 0, "L"); err != nil || res != Admitted {
			t.Fatalf("AdmitIn %s = %v, %v", u, res, err)
		}
	}
	if owner != "" {
		if got, err := s.ClaimGroup(ctx, crawl, "G", owner, nil, time.Minute, keys); err != nil || len(got) != len(keys) {
			t.Fatalf("ClaimGroup = %v, %v", got, err)
		}
	}
	return keys
}

// wantCounts checks the crawl's counters against a tally of its items, and the named counters.
func wantCounts(t *testing.T, s *Store, crawl string, want map[string]int64) {
	t.Helper()
	ctx := context.Background()
	got, err := s.Counters(ctx, crawl)
	if err != nil {
		t.Fatal(err)
	}
	tally, err := s.Tally(ctx, crawl)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]int64{"seen": got.Seen, "fetched": got.Fetched, "skipped": got.Skipped, "failed": got.Failed}
	tallied := map[string]int64{"seen": tally.Seen, "fetched": tally.Fetched, "skipped": tally.Skipped, "failed": tally.Failed}
	for name, n := range want {
		if have[name] != n || tallied[name] != n {
			t.Errorf("%s: counted %d, tallied %d, want %d", name, have[name], tallied[name], n)
		}
	}
}

// testReplayedRecord: a Record whose answer was lost is sent again; the replay finds its own
// outcomes, not a takeover, and the URLs are recorded and counted once.
func testReplayedRecord(t *testing.T, tb table.Table) {
	ctx := context.Background()
	s, f, _ := faultStore(tb)
	crawl := crawlName(t)
	urls := []string{"http://a.test/1", "http://b.test/2"}
	keys := admitted(t, s, crawl, "M", urls...)
	file := "pages/" + crawl + "/a.warc.gz"
	page := Page{WARCKey: file, Offset: 120, Length: 4567, FinalURL: urls[0], Status: 200,
		FetchedAt: time.Date(2026, 11, 29, 12, 0, 1, 0, time.UTC), Msg: message.PartName(file, 0)}
	outs := []Outcome{
		{Key: keys[0], URL: urls[0], State: Fetched, Prev: Queued, Page: &page, Owner: "M"},
		{Key: keys[1], URL: urls[1], State: Skipped, Prev: Queued, Cause: errclass.Errorf(errclass.Robots, "disallowed"), Owner: "M"},
	}
	replayNext(t, f, "update", groupKey(crawl, "G"))
	lost, err := s.Record(ctx, crawl, "G", outs)
	if err != nil || len(lost) != 0 {
		t.Fatalf("replayed Record = lost %v, %v; want every URL recorded", lost, err)
	}
	wantCounts(t, s, crawl, map[string]int64{"seen": 2, "fetched": 1, "skipped": 1})
}

// testRecordAfterATakeoverStaysLost: the replay's check does not mistake another owner's outcome,
// the same as this one, for its own.
func testRecordAfterATakeoverStaysLost(t *testing.T, tb table.Table) {
	ctx := context.Background()
	s, _, c := faultStore(tb)
	crawl := crawlName(t)
	keys := admitted(t, s, crawl, "A", "http://a.test/1")
	c.t = c.t.Add(2 * time.Minute) // A's lease ran out
	if got, err := s.ClaimGroup(ctx, crawl, "G", "B", nil, time.Minute, keys); err != nil || len(got) != 1 {
		t.Fatalf("B's claim = %v, %v", got, err)
	}
	skip := func(owner string) Outcome {
		return Outcome{Key: keys[0], URL: "http://a.test/1", State: Skipped, Prev: Queued, Cause: errclass.Errorf(errclass.Robots, "disallowed"), Owner: owner}
	}
	if lost, err := s.Record(ctx, crawl, "G", []Outcome{skip("B")}); err != nil || len(lost) != 0 {
		t.Fatalf("B's Record = %v, %v", lost, err)
	}
	if lost, err := s.Record(ctx, crawl, "G", []Outcome{skip("A")}); err != nil || len(lost) != 1 {
		t.Fatalf("A's Record after B's = lost %v, %v; want its URL lost", lost, err)
	}
	wantCounts(t, s, crawl, map[string]int64{"seen": 1, "skipped": 1})
}

// testReplayedAdmission: an admission whose answer was lost is Admitted and counted seen, not
// found Unsent as an earlier delivery's would be.
func testReplayedAdmission(t *testing.T, tb table.Table) {
	ctx := context.Background()
	s, f, _ := faultStore(tb)
	crawl := crawlName(t)
	key := urlnorm.Key("http://a.test/")
	replayNext(t, f, "put", URLKey(crawl, key))
	res, g, err := s.AdmitIn(ctx, crawl, "G", key, "http://a.test/", "http://a.test/", 0, "L")
	if err != nil || res != Admitted || g != "G" {
		t.Fatalf("replayed AdmitIn = %v, %q, %v; want Admitted in G", res, g, err)
	}
	// A second delivery of L, in another batch's group, finds it unsent, as before.
	if res, g, err := s.AdmitIn(ctx, crawl, "H", key, "http://a.test/", "http://a.test/", 0, "L"); err != nil || res != Unsent || g != "G" {
		t.Fatalf("L's redelivery = %v, %q, %v; want Unsent in G", res, g, err)
	}
	wantCounts(t, s, crawl, map[string]int64{"seen": 1})
}

// testReplayedRefetch: a Refetch whose answer was lost takes the URL back, and uncounts it once.
func testReplayedRefetch(t *testing.T, tb table.Table) {
	ctx := context.Background()
	s, f, _ := faultStore(tb)
	crawl := crawlName(t)
	keys := admitted(t, s, crawl, "M", "http://a.test/1")
	page := Page{WARCKey: "pages/" + crawl + "/a.warc.gz", Offset: 1, Length: 2, FinalURL: "http://a.test/1", Status: 200}
	if lost, err := s.Record(ctx, crawl, "G", []Outcome{{Key: keys[0], URL: "http://a.test/1", State: Fetched, Prev: Queued, Page: &page, Owner: "M"}}); err != nil || len(lost) != 0 {
		t.Fatalf("Record = %v, %v", lost, err)
	}
	u, err := s.Get(ctx, crawl, keys[0])
	if err != nil {
		t.Fatal(err)
	}
	replayNext(t, f, "update", groupKey(crawl, "G"))
	got, err := s.Refetch(ctx, crawl, keys[0], "N", time.Minute, u)
	if err != nil || got.State != Queued || got.Owner != OwnerTag("N") {
		t.Fatalf("replayed Refetch = %+v, %v; want the URL claimed by N", got, err)
	}
	wantCounts(t, s, crawl, map[string]int64{"seen": 1, "fetched": 0})
}

// testReplayedSkip: a SkipQueued whose answer was lost counts the URL skipped, once.
func testReplayedSkip(t *testing.T, tb table.Table) {
	ctx := context.Background()
	s, f, _ := faultStore(tb)
	crawl := crawlName(t)
	keys := admitted(t, s, crawl, "", "http://a.test/1")
	replayNext(t, f, "update", groupKey(crawl, "G"))
	if err := s.SkipQueued(ctx, crawl, "G", keys[0], ErrBudget); err != nil {
		t.Fatalf("replayed SkipQueued: %v", err)
	}
	// The same skip again (its caller's retry) changes nothing.
	if err := s.SkipQueued(ctx, crawl, "G", keys[0], ErrBudget); err != nil {
		t.Fatalf("SkipQueued again: %v", err)
	}
	wantCounts(t, s, crawl, map[string]int64{"seen": 1, "skipped": 1})
}

// testReplayedClaim: a claim whose answer was lost holds.
func testReplayedClaim(t *testing.T, tb table.Table) {
	ctx := context.Background()
	s, f, _ := faultStore(tb)
	crawl := crawlName(t)
	keys := admitted(t, s, crawl, "", "http://a.test/1", "http://b.test/2")
	replayNext(t, f, "update", groupKey(crawl, "G"))
	got, err := s.ClaimGroup(ctx, crawl, "G", "M", nil, time.Minute, keys)
	if err != nil || len(got) != 2 {
		t.Fatalf("replayed ClaimGroup = %v, %v; want both URLs", got, err)
	}
}

// testReplayedUnadmit: an un-admission whose delete's answer was lost uncounts the URL once.
func testReplayedUnadmit(t *testing.T, tb table.Table) {
	ctx := context.Background()
	s, f, _ := faultStore(tb)
	crawl := crawlName(t)
	keys := admitted(t, s, crawl, "", "http://a.test/1")
	replayNext(t, f, "update", groupKey(crawl, "G"))
	replayNext(t, f, "delete", URLKey(crawl, keys[0]))
	if err := s.Unadmit(ctx, crawl, "G", keys[0]); err != nil {
		t.Fatalf("replayed Unadmit: %v", err)
	}
	if _, err := s.Get(ctx, crawl, keys[0]); !errors.Is(err, table.ErrNotFound) {
		t.Errorf("the URL's item after Unadmit: %v, want none", err)
	}
	wantCounts(t, s, crawl, map[string]int64{"seen": 0})
}

// testHalfDoneUnadmitFinishes: an un-admission whose delete failed leaves a tombstone and the
// URL's item; the Links message's redelivery finishes it and admits the URL afresh in its own
// group, where it is claimed, and counted seen once. Another message still finds it Theirs.
func testHalfDoneUnadmitFinishes(t *testing.T, tb table.Table) {
	ctx := context.Background()
	s, f, _ := faultStore(tb)
	crawl := crawlName(t)
	keys := admitted(t, s, crawl, "", "http://a.test/1")
	f.Add(tabletest.Rule{Op: "delete", Key: URLKey(crawl, keys[0]), Nth: 1, Fail: true})
	if err := s.Unadmit(ctx, crawl, "G", keys[0]); !errors.Is(err, tabletest.ErrInjected) {
		t.Fatalf("Unadmit with its delete failing: %v", err)
	}
	if res, _, err := s.AdmitIn(ctx, crawl, "H", keys[0], "http://a.test/1", "http://a.test/1", 0, "other"); err != nil || res != Theirs {
		t.Fatalf("another message's AdmitIn = %v, %v; want Theirs", res, err)
	}
	replayNext(t, f, "put", URLKey(crawl, keys[0]))
	res, g, err := s.AdmitIn(ctx, crawl, "H", keys[0], "http://a.test/1", "http://a.test/1", 0, "L")
	if err != nil || res != Admitted || g != "H" {
		t.Fatalf("the redelivery's AdmitIn = %v, %q, %v; want Admitted in H", res, g, err)
	}
	if got, err := s.ClaimGroup(ctx, crawl, "H", "M", nil, time.Minute, keys); err != nil || len(got) != 1 {
		t.Fatalf("claim of the URL admitted afresh = %v, %v", got, err)
	}
	wantCounts(t, s, crawl, map[string]int64{"seen": 1})
}

// testTwoOutcomesForOneKey: a message that carried its URL twice gives Record two outcomes for
// it. One is recorded, the fetched one, and counted once: an update may name an attribute once,
// and DynamoDB refuses one that does not.
func testTwoOutcomesForOneKey(t *testing.T, tb table.Table) {
	ctx := context.Background()
	s, _, _ := faultStore(tb)
	crawl := crawlName(t)
	keys := admitted(t, s, crawl, "M", "http://a.test/1")
	page := Page{WARCKey: "pages/" + crawl + "/a.warc.gz", Offset: 1, Length: 2, FinalURL: "http://a.test/1", Status: 200}
	outs := []Outcome{
		{Key: keys[0], URL: "http://a.test/1", State: Failed, Prev: Queued, Cause: errclass.Errorf(errclass.Timeout, "slow"), Redrivable: true, Owner: "M"},
		{Key: keys[0], URL: "http://a.test/1", State: Fetched, Prev: Queued, Page: &page, Owner: "M"},
	}
	if lost, err := s.Record(ctx, crawl, "G", outs); err != nil || len(lost) != 0 {
		t.Fatalf("Record of two outcomes for one URL = %v, %v", lost, err)
	}
	if u, err := s.Get(ctx, crawl, keys[0]); err != nil || u.State != Fetched {
		t.Errorf("the URL is %q (%v), want fetched", u.State, err)
	}
	wantCounts(t, s, crawl, map[string]int64{"seen": 1, "fetched": 1, "failed": 0})
}

// testReplayedRejectAndReopen: a refusal whose answer was lost is recorded and counted once, and
// so is its reopening, which says the URL is to be sent again (a reopening taken for another
// worker's is left alone: the URL would be forgotten and never sent).
func testReplayedRejectAndReopen(t *testing.T, tb table.Table) {
	ctx := context.Background()
	s, f, _ := faultStore(tb)
	crawl := crawlName(t)
	key := urlnorm.Key("http://a.test/x")
	replayNext(t, f, "put", URLKey(crawl, key))
	if ok, err := s.Reject(ctx, crawl, key, "http://a.test/x", 1, errclass.Errorf(errclass.Scope, "excluded")); err != nil || !ok {
		t.Fatalf("replayed Reject = %v, %v; want it recorded", ok, err)
	}
	if ok, err := s.Reject(ctx, crawl, key, "http://a.test/x", 1, errclass.Errorf(errclass.Scope, "excluded")); err != nil || ok {
		t.Fatalf("Reject again = %v, %v; want it known", ok, err)
	}
	wantCounts(t, s, crawl, map[string]int64{"seen": 1, "skipped": 1})
	u, err := s.Get(ctx, crawl, key)
	if err != nil {
		t.Fatal(err)
	}
	replayNext(t, f, "delete", URLKey(crawl, key))
	if ok, err := s.Reopen(ctx, crawl, u); err != nil || !ok {
		t.Fatalf("replayed Reopen = %v, %v; want the URL reopened", ok, err)
	}
	wantCounts(t, s, crawl, map[string]int64{"seen": 0, "skipped": 0})
}

// testReplayedMovePage: a move of a stored page whose answer was lost is done, not an error.
func testReplayedMovePage(t *testing.T, tb table.Table) {
	ctx := context.Background()
	s, f, _ := faultStore(tb)
	crawl := crawlName(t)
	keys := admitted(t, s, crawl, "M", "http://a.test/1")
	page := Page{WARCKey: "pages/" + crawl + "/a.warc.gz", Offset: 1000, Length: 900, FinalURL: "http://a.test/1", Status: 200}
	if _, err := s.Record(ctx, crawl, "G", []Outcome{{Key: keys[0], URL: "http://a.test/1", State: Fetched, Prev: Queued, Page: &page, Owner: "M"}}); err != nil {
		t.Fatal(err)
	}
	u, err := s.Get(ctx, crawl, keys[0])
	if err != nil {
		t.Fatal(err)
	}
	replayNext(t, f, "update", groupKey(crawl, "G"))
	if err := s.MovePage(ctx, crawl, u, Page{Offset: 100, Length: 900}); err != nil {
		t.Fatalf("replayed MovePage: %v", err)
	}
	if moved, err := s.Get(ctx, crawl, keys[0]); err != nil || moved.Page == nil || moved.Page.Offset != 100 {
		t.Errorf("after MovePage the page is %+v, %v; want it at 100", moved.Page, err)
	}
}

// testReplayedClaimOfARedrive: a claim of a redriven failure whose answer was lost is still the
// claim of a failure: its outcome later counts the URL out of failed, as a tally does.
func testReplayedClaimOfARedrive(t *testing.T, tb table.Table) {
	ctx := context.Background()
	s, f, _ := faultStore(tb)
	crawl := crawlName(t)
	keys := admitted(t, s, crawl, "M", "http://a.test/1")
	failed := Outcome{Key: keys[0], URL: "http://a.test/1", State: Failed, Prev: Queued, Cause: errclass.Errorf(errclass.Timeout, "slow"), Redrivable: true, Owner: "M"}
	if _, err := s.Record(ctx, crawl, "G", []Outcome{failed}); err != nil {
		t.Fatal(err)
	}
	// The claim's first write is refused (a failure, not a queued URL), and its second replayed.
	f.Add(tabletest.Rule{Op: "update", Key: groupKey(crawl, "G"), Nth: 2})
	got, err := s.ClaimGroup(ctx, crawl, "G", "redrive", nil, time.Minute, keys)
	if len(f.Injected()) != 1 {
		t.Fatalf("faults injected %v, want the claim's write replayed", f.Injected())
	}
	if err != nil || got[keys[0]] != Failed {
		t.Fatalf("replayed claim of a redriven failure = %v, %v; want it claimed as failed", got, err)
	}
	page := Page{WARCKey: "pages/" + crawl + "/a.warc.gz", Offset: 1, Length: 2, FinalURL: "http://a.test/1", Status: 200}
	if _, err := s.Record(ctx, crawl, "G", []Outcome{{Key: keys[0], URL: "http://a.test/1", State: Fetched, Prev: got[keys[0]], Page: &page, Owner: "redrive"}}); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, s, crawl, map[string]int64{"seen": 1, "fetched": 1, "failed": 0})
}
