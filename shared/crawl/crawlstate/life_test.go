package crawlstate

import (
	"context"
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

// TestItemsExpireWithTheirCrawl: every item of a crawl, admitted on its first day or its
// twentieth, may expire 30 days after the crawl started; the start is recorded once.
func TestItemsExpireWithTheirCrawl(t *testing.T) {
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
	want := start.Add(30 * 24 * time.Hour) // 2026-12-29 12:00 UTC
	for _, k := range []string{"a", "b", "x"} {
		if got := expiresAt(t, s, URLKey("c", k)); !got.Equal(want) {
			t.Errorf("item %s expires %v, want %v (the crawl's start plus 30 days)", k, got, want)
		}
	}
	// A fresh store (another process) reads the start from the table.
	fresh := New(s.t, WithClock(c.now))
	if got, err := fresh.Started(ctx, "c"); err != nil || !got.Equal(start) {
		t.Errorf("Started = %v, %v; want %v", got, err, start)
	}
}

// TestACrawlAdmitsForItsWindowOnly: a crawl admits new URLs during Retention less MinItemLife
// (23 days) after its start, so that its last items still live 7 days; a crawl with no start on
// record (started before starts were kept) admits as before, its items expiring 30 days after
// their admission.
func TestACrawlAdmitsForItsWindowOnly(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t)
	start := c.t
	if err := s.MarkStarted(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		after time.Duration
		open  bool
	}{{0, true}, {22 * 24 * time.Hour, true}, {23 * 24 * time.Hour, true}, {23*24*time.Hour + time.Minute, false}, {40 * 24 * time.Hour, false}} {
		c.t = start.Add(tc.after)
		err := s.AdmissionOpen(ctx, "c")
		if open := err == nil; open != tc.open {
			t.Errorf("%v after the start: AdmissionOpen = %v, want open %v", tc.after, err, tc.open)
		}
		if err != nil && errclass.Of(err) != errclass.Scope {
			t.Errorf("a closed window's class is %q, want scope", errclass.Of(err))
		}
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
