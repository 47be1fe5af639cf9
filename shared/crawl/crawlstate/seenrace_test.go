package crawlstate

import (
	"context"
	"errors"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/port/table"
	"github.com/crawlstack/crawlstack/shared/port/table/tabletest"
)

// The seen counter against the URL items (Tally) when two deliveries of one Links message admit
// and take back the same URL, and their writes are replayed or lost in between (issue 41: the
// chaos crawl's live seen counter came out one low).

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
	f.Add(tabletest.Rule{Op: "put", Prefix: URLKey(crawl, key), Nth: 1, Lost: true})
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
	f.Add(tabletest.Rule{Op: "put", Prefix: URLKey(crawl, key), Nth: 1, Fail: true})
	if _, _, err := a.AdmitIn(ctx, crawl, "GA", key, raceURL, raceURL, 0, "L"); !errors.Is(err, tabletest.ErrInjected) {
		t.Fatalf("AdmitIn with its put failed: %v, want the put's error", err)
	}
	admitIn(t, New(tb), crawl, "GB", Admitted)
	wantCounts(t, a, crawl, map[string]int64{"seen": 1})
}
