package crawlstate

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// testARunIsClaimedAndRecordedInWritesOfTen: the 25 URLs of a run's group (one host's, fetched
// one after another) are claimed in writes of at most MaxGroupWrite, as are their outcomes, each
// write's condition inside what DynamoDB takes; every URL ends claimed once and recorded once.
func testARunIsClaimedAndRecordedInWritesOfTen(t *testing.T, tb table.Table) {
	ctx := context.Background()
	w := &writeCount{Table: tb}
	c := &clock{t: time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC)}
	s := New(w, WithClock(c.now))
	crawl := crawlName(t)
	const n = 25
	keys := make([]string, n)
	for i := range keys {
		u := fmt.Sprintf("http://a.test/%d", i)
		keys[i] = urlnorm.Key(u)
		if res, _, err := s.AdmitIn(ctx, crawl, "R", keys[i], u, u, 1, "L"); err != nil || res != Admitted {
			t.Fatalf("AdmitIn %s = %v, %v", u, res, err)
		}
	}
	got, err := s.ClaimGroup(ctx, crawl, "R", "M", nil, time.Minute, keys)
	if err != nil || len(got) != n {
		t.Fatalf("ClaimGroup = %d URLs, %v; want %d", len(got), err, n)
	}
	if w := w.writes(groupKey(crawl, "R")); w != 3 {
		t.Errorf("claiming a run of %d took %d writes, want 3", n, w)
	}
	// Claimed: another owner gets none of them.
	if other, err := s.ClaimGroup(ctx, crawl, "R", "X", nil, time.Minute, keys); err != nil || len(other) != 0 {
		t.Errorf("another owner claimed %d of the run's URLs (%v), want none", len(other), err)
	}
	outs := make([]Outcome, n)
	for i, k := range keys {
		outs[i] = Outcome{Key: k, URL: fmt.Sprintf("http://a.test/%d", i), State: Skipped, Prev: Queued, Owner: "M"}
	}
	before := w.writes(groupKey(crawl, "R"))
	if lost, err := s.Record(ctx, crawl, "R", outs); err != nil || len(lost) != 0 {
		t.Fatalf("Record = %v, %v", lost, err)
	}
	if w := w.writes(groupKey(crawl, "R")) - before; w != 3 {
		t.Errorf("recording a run of %d took %d writes, want 3", n, w)
	}
	for k, u := range getEach(t, s, crawl, keys) {
		if u.State != Skipped {
			t.Errorf("%s = %s, want skipped", k, u.State)
		}
	}
	cnt, err := s.Counters(ctx, crawl)
	if err != nil || cnt.Skipped != n || cnt.Pending() != 0 {
		t.Errorf("counters = %+v, %v; want %d skipped, none pending", cnt, err, n)
	}
}
