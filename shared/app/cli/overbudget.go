package cli

import (
	"context"
	"fmt"
	"sort"

	"github.com/crawlstack/crawlstack/shared/app/pipeline"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
)

// A link refused over --max-pages ends skipped with class budget, and a page given back later (its
// URL skipped: robots.txt, content type) goes to a link found after it. When the crawl runs out of
// links first, pages are left: then crawl run sends as many of the links refused over the budget
// again, the shallowest first, and goes on, until no page is left or no such link.

// maxReadmitPasses bounds the passes of a run over the links refused over the budget: each scans
// the crawl's URLs, and a pass whose links all end skipped again (robots.txt) gives its pages back
// for the next.
const maxReadmitPasses = 8

// readmitOverBudget sends again up to as many of the crawl's links refused over its budget as
// this run's store holds pages of it, the shallowest first. It returns how many it sent. It scans
// the crawl's URLs: crawl run does it on the embedded backend only, where a scan is a local query.
func readmitOverBudget(ctx context.Context, be *Backend, res Resources, h *pipeline.Handlers, crawl string) (int64, error) {
	st := h.State
	left := st.BudgetLeft(crawl)
	if left == 0 {
		return 0, nil
	}
	var refused []crawlstate.URL
	err := st.EachURL(ctx, crawl, func(u crawlstate.URL) error {
		if u.State == crawlstate.Skipped && u.Class == errclass.Budget {
			refused = append(refused, u)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("find the links refused over the budget: %w", err)
	}
	sort.SliceStable(refused, func(i, j int) bool { return refused[i].Depth < refused[j].Depth })
	sent, err := sendAgain(ctx, be, res, st, crawl, refused[:min(left, len(refused))], nil, h.Frontier.Forget)
	return sent[errclass.Budget], err
}
