package crawlstate

import (
	"context"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// The crawl's end gives the crawl item a time to live of the end plus its retention, and
// ExpireCounters its counter shards the same, without creating the shards no store wrote; a host's
// budget item gets one when a block is taken.
func testTheEndGivesTheCrawlsItemsATimeToLive(t *testing.T, tb table.Table) {
	ctx := context.Background()
	c := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	s := New(tb, WithClock(c.now), WithBufferedCounters())
	crawl := crawlName(t)
	if err := s.MarkStarted(ctx, crawl); err != nil {
		t.Fatal(err)
	}
	if err := s.ReserveBudget(ctx, crawl, "a.test", 0, 10); err != nil {
		t.Fatal(err)
	}
	if err := s.count(ctx, crawl, map[string]int64{"seen": 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	host, err := s.t.Get(ctx, budgetKey(crawl, "a.test"))
	if err != nil || host.Int(table.TTLAttr) != c.t.Add(DefaultRetention).Unix() {
		t.Errorf("host budget item %v, %v; want %s %d", host, err, table.TTLAttr, c.t.Add(DefaultRetention).Unix())
	}
	it, err := s.t.Get(ctx, CrawlKey(crawl))
	if err != nil || it.Has(table.TTLAttr) {
		t.Fatalf("a running crawl's item %v, %v: want no time to live", it, err)
	}
	c.t = c.t.Add(3 * time.Hour)
	want := c.t.Add(DefaultRetention).Unix()
	ch, err := s.StepCheck(ctx, crawl, Step{Seq: 0, By: "check-0", Event: `{"crawl":"x"}`})
	if err != nil || ch.End != EndPending {
		t.Fatalf("StepCheck = %+v, %v", ch, err)
	}
	if err := s.ExpireCounters(ctx, crawl, c.t.Add(DefaultRetention)); err != nil {
		t.Fatal(err)
	}
	if it, err = s.t.Get(ctx, CrawlKey(crawl)); err != nil || it.Int(table.TTLAttr) != want {
		t.Errorf("the ended crawl's item %v, %v; want %s %d", it, err, table.TTLAttr, want)
	}
	written := s.shardKey(crawl)
	for n := range CounterShards {
		sh, err := s.t.Get(ctx, ShardKey(crawl, n))
		switch {
		case ShardKey(crawl, n) == written && (err != nil || sh.Int(table.TTLAttr) != want):
			t.Errorf("shard %d = %v, %v; want %s %d", n, sh, err, table.TTLAttr, want)
		case ShardKey(crawl, n) != written && err == nil:
			t.Errorf("shard %d = %v; want none created", n, sh)
		}
	}
}

// A stall, like an end, is decided once and gives the crawl item its time to live; a later check
// that takes the chain on clears both.
func testAStallIsDecidedOnceAndClearedByALaterStep(t *testing.T, tb table.Table) {
	ctx := context.Background()
	c := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	s := New(tb, WithClock(c.now))
	crawl := crawlName(t)
	if err := s.MarkStarted(ctx, crawl); err != nil {
		t.Fatal(err)
	}
	ch, err := s.StepCheck(ctx, crawl, Step{Seq: 0, By: "check-0", Stall: `{"stalled":true}`})
	if err != nil || ch.Stall != StallPending || ch.StallBy != "check-0" || ch.StallEvent != `{"stalled":true}` || ch.Seq != 1 {
		t.Fatalf("a stalling step = %+v, %v", ch, err)
	}
	if _, err := s.StepCheck(ctx, crawl, Step{Seq: 0, By: "another copy", Stall: `{"stalled":true}`}); err == nil {
		t.Fatal("a copy of the stalling check stalled the crawl again")
	}
	if err := s.MarkStallAnnounced(ctx, crawl); err != nil {
		t.Fatal(err)
	}
	if ch, err = s.ChecksOf(ctx, crawl); err != nil || ch.Stall != StallAnnounced {
		t.Fatalf("ChecksOf = %+v, %v; want the stall announced", ch, err)
	}
	it, _ := s.t.Get(ctx, CrawlKey(crawl))
	if it.Int(table.TTLAttr) != c.t.Add(DefaultRetention).Unix() {
		t.Errorf("the stalled crawl's item has %s %d; want %d", table.TTLAttr, it.Int(table.TTLAttr), c.t.Add(DefaultRetention).Unix())
	}
	if ch, err = s.StepCheck(ctx, crawl, Step{Seq: 1, By: "revived"}); err != nil || ch.Stall != "" || ch.Seq != 2 {
		t.Fatalf("a later step = %+v, %v; want the stall cleared", ch, err)
	}
	if it, _ = s.t.Get(ctx, CrawlKey(crawl)); it.Has(table.TTLAttr) {
		t.Errorf("the revived crawl's item keeps its time to live %d", it.Int(table.TTLAttr))
	}
}
