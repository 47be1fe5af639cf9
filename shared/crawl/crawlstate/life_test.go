package crawlstate

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// expiresAt reads an item's time to live straight from the table.
func expiresAt(t *testing.T, s *Store, key table.Key) time.Time {
	t.Helper()
	it, err := s.t.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return time.Unix(it.Int(table.TTLAttr), 0).UTC()
}

// TestItemsExpireARetentionAfterTheirWrite: an item of a crawl, admitted on its first day or its
// twentieth, may expire 30 days after it was written; the start is recorded once.
func TestItemsExpireARetentionAfterTheirWrite(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t)
	start := c.t
	if err := s.MarkStarted(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	c.t = start.Add(time.Hour)
	if err := s.MarkStarted(ctx, "c"); err != nil { // the seed file read again: the first start stays
		t.Fatal(err)
	}
	if _, err := s.Admit(ctx, "c", "a", "http://a.test/a", "http://a.test/", 1, "L"); err != nil {
		t.Fatal(err)
	}
	c.t = start.Add(20 * 24 * time.Hour)
	if _, err := s.Admit(ctx, "c", "b", "http://a.test/b", "http://a.test/", 1, "L"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reject(ctx, "c", "x", "http://a.test/x", 1, errclass.Errorf(errclass.Trap, "trap")); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]time.Time{
		"a": start.Add(time.Hour + 30*24*time.Hour), "b": start.Add(50 * 24 * time.Hour), "x": start.Add(50 * 24 * time.Hour),
	} {
		if got := expiresAt(t, s, URLKey("c", k)); !got.Equal(want) {
			t.Errorf("item %s expires %v, want %v (its write plus 30 days)", k, got, want)
		}
	}
	// A fresh store (another process) reads the start from the table.
	fresh := New(s.t, WithClock(c.now))
	if got, err := fresh.Started(ctx, "c"); err != nil || !got.Equal(start) {
		t.Errorf("Started = %v, %v; want %v", got, err, start)
	}
}

// slowQueries is a table whose every Query takes a second of the test's clock.
type slowQueries struct {
	table.Table
	c *clock
}

func (q slowQueries) Query(ctx context.Context, part, prefix string, fn func(string, table.Item) error) error {
	q.c.t = q.c.t.Add(time.Second)
	return q.Table.Query(ctx, part, prefix, fn)
}

// TestACrawlAdmitsWhileItsItemsAreRenewed: a crawl admits new URLs for RenewEvery (23 days) after
// its start, so that its last items still live 7 days; Renew, once it is due, gives every item of
// the crawl a retention from the renewal, a slice of partitions per call, going on where the last
// call stopped, and the crawl admits for another 23 days. A crawl with no start on record (started
// before starts were kept) admits as before.
func TestACrawlAdmitsWhileItsItemsAreRenewed(t *testing.T) {
	ctx := context.Background()
	base, c := newStore(t)
	s := New(slowQueries{base.t, c}, WithClock(c.now))
	start := c.t
	if err := s.MarkStarted(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for i := range 200 { // in most of the crawl's 64 partitions
		k := fmt.Sprintf("k%03d", i)
		if _, err := s.Admit(ctx, "c", k, "http://a.test/"+k, "http://a.test/", 1, "L"); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	for _, tc := range []struct {
		after time.Duration
		open  bool
	}{{0, true}, {22 * 24 * time.Hour, true}, {23 * 24 * time.Hour, true}, {23*24*time.Hour + time.Minute, false}, {30 * 24 * time.Hour, false}} {
		c.t = start.Add(tc.after)
		err := New(s.t, WithClock(c.now)).AdmissionOpen(ctx, "c")
		if open := err == nil; open != tc.open {
			t.Errorf("%v after the start: AdmissionOpen = %v, want open %v", tc.after, err, tc.open)
		}
		if err != nil && errclass.Of(err) != errclass.Scope {
			t.Errorf("a closed window's class is %q, want scope", errclass.Of(err))
		}
	}

	c.t = start.Add(22 * 24 * time.Hour)
	if done, err := s.Renew(ctx, "c", time.Minute); err != nil || !done {
		t.Fatalf("Renew before it is due = %v, %v; want done at once", done, err)
	}
	if got := expiresAt(t, s, URLKey("c", keys[0])); !got.Equal(start.Add(30 * 24 * time.Hour)) {
		t.Fatalf("an item renewed before its renewal was due: expires %v", got)
	}

	renewed := start.Add(24 * 24 * time.Hour) // a day late, closed meanwhile
	c.t = renewed
	calls := 0
	for done := false; !done; calls++ {
		if calls > Shards {
			t.Fatal("the renewal never ended")
		}
		var err error
		// 10 s of the test's clock a call: about 10 partitions, each query taking a second.
		if done, err = s.Renew(ctx, "c", 10*time.Second); err != nil {
			t.Fatal(err)
		}
		if calls == 0 { // an item written while the renewal is under way outlives it: left alone
			if _, err := s.Admit(ctx, "c", "late", "http://a.test/late", "http://a.test/", 1, "L"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if calls < 6 {
		t.Errorf("the renewal took %d calls of a 10 s budget for 64 partitions of a second each, want it sliced", calls)
	}
	want := renewed.Add(30 * 24 * time.Hour)
	for _, k := range keys {
		if got := expiresAt(t, s, URLKey("c", k)); !got.Equal(want) {
			t.Errorf("item %s expires %v after the renewal, want %v", k, got, want)
		}
	}
	if got := expiresAt(t, s, URLKey("c", "late")); !got.After(want) {
		t.Errorf("the item written during the renewal expires %v, want its own expiry, after the renewal's %v", got, want)
	}
	c.t = renewed.Add(22 * 24 * time.Hour)
	if err := New(s.t, WithClock(c.now)).AdmissionOpen(ctx, "c"); err != nil {
		t.Errorf("22 days after a renewal: %v, want open", err)
	}
	c.t = renewed.Add(23*24*time.Hour + time.Hour)
	if err := New(s.t, WithClock(c.now)).AdmissionOpen(ctx, "c"); err == nil {
		t.Error("23 days after a renewal, none since: open, want closed")
	}

	c.t = start.Add(40 * 24 * time.Hour)
	if err := s.AdmissionOpen(ctx, "legacy"); err != nil {
		t.Errorf("a crawl with no start on record: %v, want open", err)
	}
	if _, err := s.Admit(ctx, "legacy", "a", "http://a.test/a", "http://a.test/", 1, "L"); err != nil {
		t.Fatal(err)
	}
	if got, want := expiresAt(t, s, URLKey("legacy", "a")), c.t.Add(30*24*time.Hour); !got.Equal(want) {
		t.Errorf("a legacy crawl's item expires %v, want %v", got, want)
	}
}

// TestACrawlOnTheEmbeddedTableAdmitsForAsLongAsItRuns: the embedded table keeps items past their
// expiry (it has no TTL), so a crawl on it admits new URLs 40 days in, and has nothing to renew.
// The same table behind a wrapper that does not say so is taken to delete them.
func TestACrawlOnTheEmbeddedTableAdmitsForAsLongAsItRuns(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t)
	if _, ok := s.t.(interface{ KeepsItems() bool }); !ok {
		t.Fatal("the embedded table does not say that it keeps items")
	}
	start := c.t
	if err := s.MarkStarted(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Admit(ctx, "c", "a", "http://a.test/a", "http://a.test/", 1, "L"); err != nil {
		t.Fatal(err)
	}
	c.t = start.Add(40 * 24 * time.Hour)
	if err := s.AdmissionOpen(ctx, "c"); err != nil {
		t.Errorf("40 days in, on the embedded table: %v, want open", err)
	}
	if done, err := s.Renew(ctx, "c", time.Minute); err != nil || !done {
		t.Errorf("Renew = %v, %v; want nothing to do", done, err)
	}
	if got := expiresAt(t, s, URLKey("c", "a")); !got.Equal(start.Add(30 * 24 * time.Hour)) {
		t.Errorf("the item expires %v: renewed on a table that keeps it", got)
	}
	wrapped := New(slowQueries{s.t, c}, WithClock(c.now))
	if err := wrapped.AdmissionOpen(ctx, "c"); err == nil {
		t.Error("behind a wrapper that does not say it keeps items: open, want closed 40 days in with no renewal")
	}
}

// gets counts a table's reads of one item.
type gets struct {
	table.Table
	n atomic.Int64
}

func (g *gets) Get(ctx context.Context, key table.Key) (table.Item, error) {
	g.n.Add(1)
	return g.Table.Get(ctx, key)
}

// TestRenewReadsNothingWhileTheCrawlIsYoung: a drain check calls Renew every minute; for a crawl
// younger than RenewEvery it reads nothing once the crawl's start is known, and reads the crawl
// item again once a renewal may be due.
func TestRenewReadsNothingWhileTheCrawlIsYoung(t *testing.T) {
	ctx := context.Background()
	base, c := newStore(t)
	g := &gets{Table: expiring{base.t}}
	s := New(g, WithClock(c.now))
	if err := s.MarkStarted(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	start := c.t
	for i := range 10 {
		c.t = start.Add(time.Duration(i) * 24 * time.Hour)
		if done, err := s.Renew(ctx, "c", time.Minute); err != nil || !done {
			t.Fatalf("Renew on day %d = %v, %v", i, done, err)
		}
	}
	if n := g.n.Load(); n != 1 {
		t.Errorf("%d reads in 10 days of Renew, want 1 (the start, once)", n)
	}
	c.t = start.Add(24 * 24 * time.Hour)
	if _, err := s.Renew(ctx, "c", time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := g.n.Load(); n < 2 {
		t.Errorf("%d reads once a renewal is due, want the crawl item read again", n)
	}
}

// expiring is a table that does not say it keeps items past their expiry.
type expiring struct{ table.Table }
