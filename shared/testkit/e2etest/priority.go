package e2etest

import (
	"context"
	"fmt"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"

	"github.com/crawlstack/crawlstack/shared/demo/demosite"
)

// CheckPriorityUnderABudget crawls the site from a spec whose page budget holds the home page and
// as many more pages as it links to even-numbered pages, with a rule that gives those high
// priority: the crawl fetches the home page and exactly those pages, where the page's own order
// would have spent the budget on its first links (the check fails if it would not have). The
// oracle is the site's own links (demosite.Site.Targets) and its own count of requests.
func (h *Harness) CheckPriorityUnderABudget(concurrency int) {
	t := h.T
	t.Helper()
	var inOrder []int // the home page's distinct links to pages, in the page's order
	seen := map[int]bool{0: true}
	for _, p := range h.Site.Targets(0) {
		if !seen[p] {
			seen[p] = true
			inOrder = append(inOrder, p)
		}
	}
	var high []int
	for _, p := range inOrder {
		if p%2 == 0 {
			high = append(high, p)
		}
	}
	if len(high) == 0 || len(high) == len(inOrder) {
		t.Fatalf("the home page links %v: want odd and even pages, for the budget to choose", inOrder)
	}
	byOrder := false // the page's order would have taken an odd page within the budget
	for _, p := range inOrder[:len(high)] {
		byOrder = byOrder || p%2 == 1
	}
	if !byOrder {
		t.Fatalf("the home page's first %d links %v are all even: the order alone would pass", len(high), inOrder[:len(high)])
	}
	spec := fmt.Sprintf(`version: 1
seeds:
  - %s
max_pages: %d
priority:
  - pattern: '/p/[0-9]*[02468]$'
    priority: high
  - pattern: '/private/'
    priority: low
`, h.Site.URL, 1+len(high))
	crawl := h.CrawlFile("priority.yaml", spec, concurrency)
	tally, err := crawlstate.New(h.Table).Tally(context.Background(), crawl)
	if err != nil {
		t.Fatal(err)
	}
	if tally.Fetched != int64(1+len(high)) || tally.Pending() != 0 || tally.Failed != 0 {
		t.Errorf("tally %d fetched, %d pending, %d failed: want %d fetched, none pending or failed", tally.Fetched, tally.Pending(), tally.Failed, 1+len(high))
	}
	want := map[string]bool{demosite.Path(0): true}
	for _, p := range high {
		want[demosite.Path(p)] = true
	}
	for p := range want {
		if h.Site.Hits(p) != 1 {
			t.Errorf("%s asked for %d times, want once: a high-priority page within the budget", p, h.Site.Hits(p))
		}
	}
	if got := h.Site.Fetched(); got != len(want) {
		t.Errorf("the site served %d pages, want the %d of the home page and its high-priority links", got, len(want))
	}
}
