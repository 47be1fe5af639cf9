package crawlstate

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/port/table"
	"github.com/crawlstack/crawlstack/shared/port/table/tabletest"
)

// The seen counter against the URL items (Tally) when two deliveries of one Links message admit
// and take back the same URL, and their writes are replayed or lost in between (issue 41: the
// chaos crawl's live seen counter came out one low). Each interleaving is named by the write it
// stops at, so that the proof does not depend on which goroutine wrote first.

// between runs fn once, before the nth write of op to a key with the prefix reaches the table it
// wraps. Under a tabletest.Faults that replays a write, the second write is the replay: fn then
// runs after the write was applied and before it is sent again.
type between struct {
	table.Table
	op  string
	key table.Key
	nth int
	fn  func()

	mu   sync.Mutex
	seen int
	ran  bool
}

func (b *between) before(op string, key table.Key) {
	b.mu.Lock()
	run := false
	if op == b.op && key == b.key {
		b.seen++
		run = b.seen == b.nth && !b.ran
		b.ran = b.ran || run
	}
	b.mu.Unlock()
	if run {
		b.fn()
	}
}

func (b *between) Put(ctx context.Context, key table.Key, it table.Item, c table.Cond) error {
	b.before("put", key)
	return b.Table.Put(ctx, key, it, c)
}

func (b *between) Update(ctx context.Context, key table.Key, u table.Update, c table.Cond) (table.Item, error) {
	b.before("update", key)
	return b.Table.Update(ctx, key, u, c)
}

func (b *between) Delete(ctx context.Context, key table.Key, c table.Cond) error {
	b.before("delete", key)
	return b.Table.Delete(ctx, key, c)
}

// checkRan fails the test at its end unless b's fn ran.
func (b *between) checkRan(t *testing.T) {
	t.Cleanup(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if !b.ran {
			t.Errorf("the %s of %s number %d never came", b.op, b.key, b.nth)
		}
	})
}

const raceURL = "http://a.test/p"

// admitIn admits raceURL in group by the Links message L with s, and wants want.
func admitIn(t *testing.T, s *Store, crawl, group string, want AdmitResult) {
	t.Helper()
	res, _, err := s.AdmitIn(context.Background(), crawl, group, urlnorm.Key(raceURL), raceURL, raceURL, 0, "L")
	if err != nil || res != want {
		t.Fatalf("AdmitIn in %s = %v, %v; want %v", group, res, err, want)
	}
}

// testLostAdmissionCountsOnce: the put that admits a URL is applied and its answer lost for good
// (the SDK's retries ran out). The delivery whose put it is reads the item, finds its own
// admission, and counts the URL seen; L's redelivery finds it Unsent and counts nothing.
func testLostAdmissionCountsOnce(t *testing.T, tb table.Table) {
	ctx := context.Background()
	f := tabletest.NewFaults(tb)
	a := New(f)
	crawl := crawlName(t)
	key := urlnorm.Key(raceURL)
	f.Add(tabletest.Rule{Op: "put", Key: URLKey(crawl, key), Nth: 1, Lost: true})
	if res, g, err := a.AdmitIn(ctx, crawl, "GA", key, raceURL, raceURL, 0, "L"); err != nil || res != Admitted || g != "GA" {
		t.Fatalf("AdmitIn with its answer lost = %v, %q, %v; want Admitted in GA", res, g, err)
	}
	if len(f.Injected()) != 1 {
		t.Fatalf("faults injected %v, want the admission's put lost", f.Injected())
	}
	// L's redelivery, in another batch's group and another container, sends the URL again.
	if res, g, err := New(tb).AdmitIn(ctx, crawl, "GB", key, raceURL, raceURL, 0, "L"); err != nil || res != Unsent || g != "GA" {
		t.Fatalf("L's redelivery = %v, %q, %v; want Unsent in GA", res, g, err)
	}
	wantCounts(t, a, crawl, map[string]int64{"seen": 1})
}

// testFailedAdmissionCountsNothing: the put that admits a URL fails unapplied; the delivery
// fails, and L's redelivery admits the URL and counts it, once.
func testFailedAdmissionCountsNothing(t *testing.T, tb table.Table) {
	ctx := context.Background()
	f := tabletest.NewFaults(tb)
	a := New(f)
	crawl := crawlName(t)
	key := urlnorm.Key(raceURL)
	f.Add(tabletest.Rule{Op: "put", Key: URLKey(crawl, key), Nth: 1, Fail: true})
	if _, _, err := a.AdmitIn(ctx, crawl, "GA", key, raceURL, raceURL, 0, "L"); !errors.Is(err, tabletest.ErrInjected) {
		t.Fatalf("AdmitIn with its put failed: %v, want the put's error", err)
	}
	admitIn(t, New(tb), crawl, "GB", Admitted)
	wantCounts(t, a, crawl, map[string]int64{"seen": 1})
}

// testTwoDeliveriesTakeBackOneAdmission: delivery A admits the URL in GA, and its budget
// reservation fails: it takes the admission back (Unadmit). Between A's tombstone and A's delete,
// delivery B of the same message finishes A's un-admission (it admits the URL afresh in GB), and
// its own reservation fails too: it takes its admission back. Then a third delivery admits the
// URL. One item, one seen.
func testTwoDeliveriesTakeBackOneAdmission(t *testing.T, tb table.Table) {
	ctx := context.Background()
	crawl := crawlName(t)
	key := urlnorm.Key(raceURL)
	b := New(tb)
	hook := &between{Table: tb, op: "delete", key: URLKey(crawl, key), nth: 1, fn: func() {
		admitIn(t, b, crawl, "GB", Admitted)
		if err := b.Unadmit(ctx, crawl, "GB", key); err != nil {
			t.Errorf("B's Unadmit: %v", err)
		}
	}}
	hook.checkRan(t)
	a := New(hook)
	admitIn(t, a, crawl, "GA", Admitted)
	if err := a.Unadmit(ctx, crawl, "GA", key); err != nil {
		t.Fatalf("A's Unadmit: %v", err)
	}
	admitIn(t, New(tb), crawl, "GC", Admitted)
	wantCounts(t, a, crawl, map[string]int64{"seen": 1})
}

// testUnadmitReplayedAfterAFreshAdmission: A's Unadmit deletes the URL's item, and its answer is
// lost; before the SDK sends the delete again, delivery C of the same message admits the URL
// afresh in GC. A's replay finds C's item, and still uncounts its own. One item, one seen.
func testUnadmitReplayedAfterAFreshAdmission(t *testing.T, tb table.Table) {
	ctx := context.Background()
	crawl := crawlName(t)
	key := urlnorm.Key(raceURL)
	c := New(tb)
	hook := &between{Table: tb, op: "delete", key: URLKey(crawl, key), nth: 2, fn: func() {
		admitIn(t, c, crawl, "GC", Admitted)
	}}
	hook.checkRan(t)
	f := tabletest.NewFaults(hook, tabletest.Rule{Op: "delete", Key: URLKey(crawl, key), Nth: 1})
	a := New(f)
	admitIn(t, a, crawl, "GA", Admitted)
	if err := a.Unadmit(ctx, crawl, "GA", key); err != nil {
		t.Fatalf("A's Unadmit: %v", err)
	}
	wantCounts(t, a, crawl, map[string]int64{"seen": 1})
}

// testReadmittedThenTakenBackIsAdmittedAgain: a URL admitted afresh over a half-done
// un-admission (B in GB), and taken back again, is admitted by the next delivery and claimed
// in its group, and counted seen once.
func testReadmittedThenTakenBackIsAdmittedAgain(t *testing.T, tb table.Table) {
	ctx := context.Background()
	crawl := crawlName(t)
	key := urlnorm.Key(raceURL)
	f := tabletest.NewFaults(tb, tabletest.Rule{Op: "delete", Key: URLKey(crawl, key), Nth: 1, Fail: true})
	a := New(f)
	admitIn(t, a, crawl, "GA", Admitted)
	if err := a.Unadmit(ctx, crawl, "GA", key); err == nil {
		t.Fatal("A's Unadmit with its delete failing: no error")
	}
	b := New(tb)
	admitIn(t, b, crawl, "GB", Admitted)
	if err := b.Unadmit(ctx, crawl, "GB", key); err != nil {
		t.Fatalf("B's Unadmit: %v", err)
	}
	if res, _, err := b.AdmitIn(ctx, crawl, "GX", key, raceURL, raceURL, 0, "other"); err != nil || res != Theirs {
		t.Fatalf("another message's AdmitIn = %v, %v; want Theirs", res, err)
	}
	c := New(tb)
	admitIn(t, c, crawl, "GC", Admitted)
	if got, err := c.ClaimGroup(ctx, crawl, "GC", "M", nil, time.Minute, []string{key}); err != nil || len(got) != 1 {
		t.Fatalf("claim of the URL admitted again = %v, %v", got, err)
	}
	wantCounts(t, a, crawl, map[string]int64{"seen": 1})
}

// testLostUnadmitUncountsOnce: the delete that takes an admission back is applied and its answer
// lost for good. The Unadmit reads the item back, finds it gone, and uncounts the URL; L's
// redelivery admits it afresh and counts it. One item, one seen.
func testLostUnadmitUncountsOnce(t *testing.T, tb table.Table) {
	ctx := context.Background()
	crawl := crawlName(t)
	key := urlnorm.Key(raceURL)
	f := tabletest.NewFaults(tb, tabletest.Rule{Op: "delete", Key: URLKey(crawl, key), Nth: 1, Lost: true})
	a := New(f)
	admitIn(t, a, crawl, "GA", Admitted)
	if err := a.Unadmit(ctx, crawl, "GA", key); err != nil {
		t.Fatalf("Unadmit with its delete's answer lost: %v", err)
	}
	if len(f.Injected()) != 1 {
		t.Fatalf("faults injected %v, want the delete's answer lost", f.Injected())
	}
	admitIn(t, New(tb), crawl, "GB", Admitted)
	wantCounts(t, a, crawl, map[string]int64{"seen": 1})
}

// testLostRejectCountsOnce: the put that refuses a URL is applied and its answer lost for good.
// The refusal reads its item back, finds its own token, and counts the URL seen and skipped; a
// second refusal finds the URL known.
func testLostRejectCountsOnce(t *testing.T, tb table.Table) {
	ctx := context.Background()
	crawl := crawlName(t)
	key := urlnorm.Key(raceURL)
	f := tabletest.NewFaults(tb, tabletest.Rule{Op: "put", Key: URLKey(crawl, key), Nth: 1, Lost: true})
	a := New(f)
	why := errclass.Errorf(errclass.Scope, "excluded")
	if ok, err := a.Reject(ctx, crawl, key, raceURL, 1, why); err != nil || !ok {
		t.Fatalf("Reject with its answer lost = %v, %v; want it recorded", ok, err)
	}
	if ok, err := New(tb).Reject(ctx, crawl, key, raceURL, 1, why); err != nil || ok {
		t.Fatalf("Reject again = %v, %v; want it known", ok, err)
	}
	wantCounts(t, a, crawl, map[string]int64{"seen": 1, "skipped": 1})
}
