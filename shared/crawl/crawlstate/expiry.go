package crawlstate

import (
	"context"
	"fmt"
	"time"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// ExpireCounters gives the crawl's counter shards that exist the time to live at (the crawl's end
// or stall plus its retention), as the decision gave the crawl item: a finished crawl leaves no
// item without one. One conditional update a shard, idempotent: a check that fails midway and
// comes again writes them all again. A shard no store wrote is not created.
func (s *Runs) ExpireCounters(ctx context.Context, crawl string, at time.Time) error {
	for n := range CounterShards {
		_, err := s.t.Update(ctx, ShardKey(crawl, n), table.Update{Set: map[string]any{table.TTLAttr: at.Unix()}}, table.ItemExists())
		if _, absent := table.IsConditionFailed(err); err != nil && !absent {
			return fmt.Errorf("expire the counters of crawl %s: %w", crawl, err)
		}
	}
	return nil
}

// Retention is how long a crawl's items live after its end (or its start: life.go).
func (s *Runs) Retention() time.Duration { return s.retention }
