package crawlstate

import (
	"context"
	"fmt"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// Reopen forgets u, a URL of the crawl that ended skipped, as ScanURLs read it: its item goes, and
// its counts with it, so that a Links message that names it again admits it afresh, or refuses it
// again, under the settings of the run that sends it (crawl run, when a flag that refused it has
// changed since). It returns false when the URL is no longer as read: another worker moved it on.
func (s *Store) Reopen(ctx context.Context, crawl string, u URL) (bool, error) {
	if u.State != Skipped {
		return false, fmt.Errorf("reopen %s: it is %s, not skipped", u.URL, u.State)
	}
	// A URL skipped at its fetch (or before its send) has its outcome in its group and stays
	// queued in its item; one refused at its admission is skipped in its item. An item taken away
	// leaves its group's outcome behind, for a message of the old group to find done; admitted
	// again, the URL gets a group of its own.
	cond := table.And(table.Eq(attrState, string(Skipped)), table.Eq(attrClass, string(u.Class)))
	if u.outcome != "" {
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
	return true, s.count(ctx, crawl, map[string]int64{"seen": -1, string(Skipped): -1, "class_" + string(u.Class): -1})
}
