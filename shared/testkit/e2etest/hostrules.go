package e2etest

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/demo/demosite"
)

// The rates of CheckHostRules: the crawl's own, and the two hosts' rules over it.
const (
	hostRulesCrawlRPS = 1
	hostRulesFastRPS  = 20
	hostRulesSlowRPS  = 4
	// hostRulesSlowSeeds are the pages of the slow site that are seeds (pages 0 to 5).
	hostRulesSlowSeeds = 6
)

// HostRulesSpec is a spec that crawls the harness's site (the fast host: its root, at 20
// requests per second, one link deep by its rule) and the first pages of slow (at 4 requests per
// second, its seeds only: the crawl's max_depth of 0, which its rule leaves), under a crawl rate
// of 1: each host's rule sets its rate and a header of its own, and the crawl's header goes to
// both. The fast host's rule is deeper than the crawl: its root's links must reach schedule.
func (h *Harness) HostRulesSpec(slow *Site) string {
	fast, _ := url.Parse(h.Site.URL)
	sl, _ := url.Parse(slow.URL)
	var seeds []string
	seeds = append(seeds, h.Site.URL)
	for i := 0; i < hostRulesSlowSeeds; i++ {
		seeds = append(seeds, slow.PageURL(i))
	}
	return fmt.Sprintf(`version: 1
seeds: [%s]
rate: %d
max_depth: 0
headers: {X-Crawl-Spec: both-hosts}
hosts:
  %q:
    rate: %d
    max_depth: 1
    headers: {%s: fast}
  %q:
    rate: %d
    concurrency: 1
    headers: {%s: slow}
`, strings.Join(seeds, ", "), hostRulesCrawlRPS, fast.Host, hostRulesFastRPS, HostRuleHeader, sl.Host, hostRulesSlowRPS, HostRuleHeader)
}

// CheckHostRules crawls two hosts in one crawl from a spec whose hosts section gives each its own
// rate, depth and header (HostRulesSpec), with concurrency fetches in flight:
//   - each host sees the pages its depth allows, once, and no other: the fast host its root and
//     the root's links (demosite.Targets is the oracle), the slow host its seeds and none of their
//     links;
//   - the slow host's requests keep its rate; the fast host's links come faster than the slow
//     host's rate would allow, and no faster than its own;
//   - each host saw its own header on every request, robots.txt's too, and never the other's,
//     and the crawl's header on every request.
func (h *Harness) CheckHostRules(concurrency int) {
	t := h.T
	t.Helper()
	slow := NewSite(t, 12, 3)
	started := time.Now()
	crawl := h.CrawlFile("hosts.yaml", h.HostRulesSpec(slow), concurrency)

	wantFast := map[int]bool{0: true}
	for _, j := range h.Site.Targets(0) {
		wantFast[j] = true
	}
	wantSlow := map[int]bool{}
	for i := 0; i < hostRulesSlowSeeds; i++ {
		wantSlow[i] = true
	}
	h.checkFetchedExactly("fast", h.Site, wantFast)
	h.checkFetchedExactly("slow", slow, wantSlow)

	ctx := context.Background()
	c, err := crawlstate.New(h.Table).Tally(ctx, crawl)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(len(wantFast) + len(wantSlow)); c.Pending() != 0 || c.Fetched != want || c.Failed != 0 {
		t.Errorf("counters = %+v: want %d fetched, none pending or failed", c, want)
	}
	recs := h.Records(crawl)
	for site, want := range map[*Site]map[int]bool{h.Site: wantFast, slow: wantSlow} {
		for i := range want {
			if !recs[site.PageURL(i)] {
				t.Errorf("no record for %s", site.PageURL(i))
			}
		}
	}
	h.CheckDLQs(map[string]int{})

	// A slot is never before the instant its URL was admitted, and a request never before its
	// slot: so each host's last request comes at least its gaps after an instant known to be
	// before its first slot, however late a loaded machine sends each request.
	slowGap := time.Second / hostRulesSlowRPS
	fastGap := time.Second / hostRulesFastRPS
	// The slow host's seeds were admitted after the crawl started: they keep its rate.
	atLeast(t, "slow", slow.Times(), started, slowGap)
	// The fast host's links were admitted after its root was fetched: they keep the fast host's
	// rate, and come well within the slow host's (or the crawl's) gaps.
	fast := h.Site.Times()
	if len(fast) < 3 {
		t.Fatalf("the fast host saw %d page requests, want its root and its links", len(fast))
	}
	atLeast(t, "fast", fast[1:], fast[0], fastGap)
	links := fast[1:]
	if n := len(links); n >= 2 {
		if span, bound := links[n-1].Sub(links[0]), time.Duration(n-1)*slowGap; span >= bound {
			t.Errorf("the fast host's %d links took %v, at least the %v the slow host's rate would: its rule's rate was not applied", n, span, bound)
		}
	}

	for name, site := range map[string]*Site{"fast": h.Site, "slow": slow} {
		got := site.HostRuleHeaders()
		if len(got) != 1 || got[name] == 0 {
			t.Errorf("the %s host saw %s values %v, want only %q", name, HostRuleHeader, got, name)
		}
		for agent, n := range site.Agents() {
			if !strings.HasSuffix(agent, "|both-hosts") {
				t.Errorf("the %s host saw %d requests without the crawl's header (%q)", name, n, agent)
			}
		}
	}
}

// checkFetchedExactly checks that site served each page of want once, and no other page.
func (h *Harness) checkFetchedExactly(name string, site *Site, want map[int]bool) {
	h.T.Helper()
	var wrong []string
	for i := 0; i < site.Pages; i++ {
		hits := site.Hits(demosite.Path(i))
		if (want[i] && hits != 1) || (!want[i] && hits != 0) {
			wrong = append(wrong, fmt.Sprintf("%s:%d", demosite.Path(i), hits))
		}
	}
	sort.Strings(wrong)
	if len(wrong) > 0 {
		h.T.Errorf("the %s host served pages a number of times its depth does not allow (path:hits): %v; want once each of %d pages", name, wrong, len(want))
	}
}

// atLeast checks that the last of times, the requests of one host whose first slot was no
// earlier than from, came at least (n-1) gaps after from: n requests at one slot per gap.
func atLeast(t interface {
	Helper()
	Errorf(string, ...any)
}, name string, times []time.Time, from time.Time, gap time.Duration) {
	t.Helper()
	n := len(times)
	if n < 2 {
		t.Errorf("the %s host saw %d page requests, want 2 or more", name, n)
		return
	}
	if took, want := times[n-1].Sub(from), time.Duration(n-1)*gap; took < want {
		t.Errorf("the %s host's %d requests came within %v, want at least %v at one per %v", name, n, took, want, gap)
	}
}
