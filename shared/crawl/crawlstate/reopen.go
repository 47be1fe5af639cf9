package crawlstate

import (
	"context"
	"fmt"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// Reopen forgets u, a URL of the crawl that ended skipped, as EachURL read it: its item goes, and
// its counts with it, so that a Links message that names it again admits it afresh, or refuses it
// again, under the settings of the run that sends it (crawl run, when a flag that refused it has
// changed since). It returns false when the URL is no longer as read: another worker moved it on.
func (s *URLs) Reopen(ctx context.Context, crawl string, u URL) (bool, error) {
	if u.State != Skipped {
		return false, fmt.Errorf("reopen %s: it is %s, not skipped", u.URL, u.State)
	}
	// A URL skipped at its fetch (or before its send) has its outcome in its group and stays
	// queued in its item; one refused at its admission is skipped in its item.
	cond := table.And(table.Eq(attrState, string(Skipped)), table.Eq(attrClass, string(u.Class)))
	if u.outcome != "" {
		if ok, err := s.closeOutcome(ctx, crawl, u); !ok || err != nil {
			return false, err
		}
		cond = table.Eq(attrState, string(Queued))
	}
	err := s.t.Delete(ctx, URLKey(crawl, u.Key), cond)
	// No item at all: this delete's own, applied before and sent again by the SDK. Nothing else
	// deletes a skipped URL's item but a crawl's erase.
	if cf, moved := table.IsConditionFailed(err); moved && len(cf.Item) > 0 {
		return false, nil
	} else if err != nil && !moved {
		return false, fmt.Errorf("reopen %s: %w", u.URL, err)
	}
	return true, s.counts.count(ctx, crawl, map[string]int64{"seen": -1, string(Skipped): -1, "class_" + string(u.Class): -1})
}

// closeOutcome replaces u's outcome in its group with a tombstone, before its item goes: a message
// of the old group still finds the URL done, and no claim can take it, while the group holds no
// outcome of a URL that has no item in it (a tally counts the URLs left as the queued items less
// the outcomes, tally.go). Admitted again, the URL gets a group of its own. A write that stopped
// here leaves the item queued and tombstoned, as a half-done Unadmit does: the crawl then shows it
// left, and never ends early. It returns false when the outcome is no longer as read: another
// worker moved the URL on.
func (s *URLs) closeOutcome(ctx context.Context, crawl string, u URL) (bool, error) {
	_, err := s.t.Update(ctx, groupKey(crawl, GroupOf(u)), table.Update{
		Set:    map[string]any{tombstoneAttr(u.Key): true},
		Remove: []string{outcomeAttr(u.Key), redriveAttr(u.Key)},
	}, table.Eq(outcomeAttr(u.Key), u.outcome))
	cf, moved := table.IsConditionFailed(err)
	switch {
	case moved && cf.Item.Has(tombstoneAttr(u.Key)) && !cf.Item.Has(outcomeAttr(u.Key)):
		return true, nil // its own write, sent again by the SDK, or an earlier Reopen's that stopped here
	case moved:
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reopen %s: %w", u.URL, err)
	}
	return true, nil
}
