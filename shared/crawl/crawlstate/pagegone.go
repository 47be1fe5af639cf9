package crawlstate

import (
	"context"
	"errors"
	"fmt"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/safelog"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// EndPageGone ends the URL key of the crawl, recorded fetched with its page in the WARC file
// warcKey, as failed with class errclass.PageGone: parse found the file gone (purged, or expired
// by the lifecycle), so the URL has no page and no record to show for its fetch. Its outcome in its
// group is replaced on the condition that it is still the fetched one read, and the counters move
// one URL from fetched to failed (Seen and the pages waiting for a parse stay as they were: the
// parse message is still marked parsed).
//
// It returns false, and counts nothing, when the URL is not fetched at that file: already ended so
// (a duplicate delivery), erased, or another page's. A write that the SDK sent again because its
// answer was lost finds its own outcome and counts once.
func (s *URLs) EndPageGone(ctx context.Context, crawl, key, warcKey string, cause error) (bool, error) {
	u, err := s.Get(ctx, crawl, key)
	if errors.Is(err, table.ErrNotFound) {
		return false, nil // erased with its crawl's purge: nothing is left to end
	}
	if err != nil {
		return false, fmt.Errorf("end %s as page_gone: %w", key, err)
	}
	if u.State != Fetched || u.Page == nil || u.Page.WARCKey != warcKey || u.outcome == "" {
		return false, nil
	}
	b := stored{S: stateCodes[Failed], C: errclass.PageGone, D: safelog.Truncate(cause.Error()), W: randomTag()}.text()
	attr := outcomeAttr(key)
	_, err = s.t.Update(ctx, groupKey(crawl, GroupOf(u)), table.Update{
		Set:    map[string]any{attr: b},
		Remove: []string{redriveAttr(key)},
	}, table.Eq(attr, u.outcome))
	if cf, moved := table.IsConditionFailed(err); moved {
		if cf.Item.String(attr) != b {
			return false, nil // another worker's write came first: it counted its own
		}
		// Its own write, applied before and sent again by the SDK: count it now.
	} else if err != nil {
		return false, fmt.Errorf("end %s as page_gone: %w", key, err)
	}
	return true, s.counts.count(ctx, crawl, map[string]int64{Fetched.counter(): -1, Failed.counter(): 1,
		"class_" + string(errclass.PageGone): 1})
}
