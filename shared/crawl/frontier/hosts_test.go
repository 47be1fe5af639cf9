package frontier

import (
	"context"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/scope"
)

// A spec's hosts section gives each host its own slot gap and depth at admission: a host with a
// rule takes its rule's rate and max depth, one without the crawl's.
func TestHostRulesSetEachHostsGapAndDepth(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	snd := &fakeSender{}
	rate, slow, deep, crawlDepth := 1.0, 0.5, 3, 1
	spec := &crawlspec.Settings{Version: 1, Rate: &rate, MaxDepth: &crawlDepth, Hosts: []crawlspec.HostRule{
		{Pattern: "slow.test", Rate: &slow},
		{Pattern: "deep.test", MaxDepth: &deep},
	}}
	c, err := spec.Over(crawlspec.Crawl{Rules: scope.Rules{Mode: scope.Any, MaxDepth: 16, Traps: scope.DefaultTraps()}, HostRPS: 1})
	if err != nil {
		t.Fatal(err)
	}
	f := New(Config{Rules: scope.DefaultRules(), FetchQueue: "fetch", HostInterval: time.Second}, withState(st, Deps{Send: snd, Log: quiet(),
		Crawls: crawlsFunc(func(string) *crawlspec.Crawl { return c })}))
	// Each host booked a moment ago, so that its lone URL books a slot here (that of an idle
	// host goes without one, for the fetcher to take: send.go, idle), at its rule's gap.
	for _, host := range []string{"slow.test", "deep.test", "other.test"} {
		if _, err := st.ReserveSlots(ctx, host, time.Second, 1, 0); err != nil {
			t.Fatal(err)
		}
	}
	// Links found two hops from the seed: only deep.test's rule lets them in.
	m := &message.Links{Header: message.Header{Crawl: "hosts"}, Root: "http://seed.test/", Depth: 2,
		URLs: []string{"http://slow.test/1", "http://deep.test/1", "http://other.test/1"}}
	if res, err := f.Admit(ctx, m); err != nil || res.Sent != 1 || res.Rejected != 2 {
		t.Fatalf("depth 2: %+v (%v), want deep.test's one sent and two refused", res, err)
	}
	m = &message.Links{Header: message.Header{Crawl: "hosts"}, Root: "http://seed.test/", Depth: 1,
		URLs: []string{"http://slow.test/2", "http://other.test/2"}}
	if res, err := f.Admit(ctx, m); err != nil || res.Sent != 2 {
		t.Fatalf("depth 1: %+v (%v), want both sent", res, err)
	}
	gaps := map[string]int64{}
	for _, b := range snd.bodies {
		fm, err := message.DecodeFetch(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range fm.Split() {
			gaps[p.URL] = p.Gap
		}
	}
	want := map[string]int64{"http://slow.test/2": 2000, "http://other.test/2": 1000, "http://deep.test/1": 1000}
	for u, g := range want {
		if gaps[u] != g {
			t.Errorf("%s: slot gap %d ms, want %d (all gaps %v)", u, gaps[u], g, gaps)
		}
	}
}
