package crawlstate

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// testReopen: a URL refused at its admission (Reject) and one skipped at its fetch (Record, under
// its owner's claim) are forgotten by Reopen, counts and all, and the next Admit admits them
// afresh; a URL that moved on since it was read is left alone. Get and Counters are the oracle.
func testReopen(t *testing.T, tb table.Table) {
	ctx := context.Background()
	s := New(tb)
	crawl := crawlName(t)
	refused, skipped, fetched := "http://a.test/x", "http://b.test/y", "http://c.test/z"
	rk, sk, fk := urlnorm.Key(refused), urlnorm.Key(skipped), urlnorm.Key(fetched)
	if _, err := s.Reject(ctx, crawl, rk, refused, 2, errclass.Errorf(errclass.Scope, "excluded")); err != nil {
		t.Fatal(err)
	}
	for _, k := range []struct{ key, u string }{{sk, skipped}, {fk, fetched}} {
		if _, err := s.Admit(ctx, crawl, k.key, k.u, k.u, 0, "L"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Claim(ctx, crawl, k.key, "M#1", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	outs := []Outcome{{Key: sk, URL: skipped, State: Skipped, Prev: Queued, Cause: errclass.Errorf(errclass.SSRF, "not public"), Owner: "M#1"}}
	if _, err := s.Record(ctx, crawl, sk, outs); err != nil { // admitted as a group of its own
		t.Fatal(err)
	}
	if err := s.WriteCounters(ctx); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{rk, sk} {
		u, err := s.Get(ctx, crawl, key)
		if err != nil || u.State != Skipped {
			t.Fatalf("Get %s = %+v, %v; want skipped", key, u, err)
		}
		if ok, err := s.Reopen(ctx, crawl, u); !ok || err != nil {
			t.Errorf("Reopen %s = %v, %v; want done", u.URL, ok, err)
		}
		if _, err := s.Get(ctx, crawl, key); !errors.Is(err, table.ErrNotFound) {
			t.Errorf("after Reopen, Get %s = %v, want not found", u.URL, err)
		}
	}
	// Read as skipped, but claimed and done by someone else since: left alone.
	stale := URL{Key: fk, URL: fetched, State: Skipped, Class: errclass.SSRF, Owner: "M#2"}
	if ok, err := s.Reopen(ctx, crawl, stale); ok || err != nil {
		t.Errorf("Reopen of a URL another owner holds = %v, %v; want left alone", ok, err)
	}
	if err := s.WriteCounters(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := s.Counters(ctx, crawl)
	if err != nil || c.Seen != 1 || c.Skipped != 0 || c.Classes[errclass.Scope] != 0 || c.Classes[errclass.SSRF] != 0 {
		t.Errorf("counters after two reopens = %+v, %v; want the one URL left seen, none skipped", c, err)
	}
	if res, err := s.Admit(ctx, crawl, rk, refused, refused, 2, "L2"); err != nil || res != Admitted {
		t.Errorf("Admit of the reopened %s = %v, %v; want admitted afresh", refused, res, err)
	}
	// The URL skipped in its group, admitted again in another: its old group keeps no outcome of
	// it (a tally counts the URLs left as the queued items less the outcomes), and a message of the
	// old group still finds it done.
	if res, _, err := s.AdmitIn(ctx, crawl, "G2", sk, skipped, skipped, 0, "L2"); err != nil || res != Admitted {
		t.Fatalf("AdmitIn of the reopened %s = %v, %v; want admitted afresh", skipped, res, err)
	}
	if done, _, err := s.Done(ctx, crawl, sk, sk, "M#3", nil); err != nil || !done {
		t.Errorf("Done in the old group of the reopened %s = %v, %v; want done", skipped, done, err)
	}
	tally, left, err := s.Drained(ctx, crawl)
	if err != nil || tally.Seen != 3 || tally.Skipped != 0 || left.Queued != 3 {
		t.Errorf("Drained after the reopens = %+v, %+v, %v; want 3 seen and queued (one claimed, two admitted again), none skipped",
			tally, left, err)
	}
}
