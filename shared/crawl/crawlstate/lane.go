package crawlstate

import (
	"context"
	"fmt"
	"time"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// A lane's holder: of the invocations of one queue's function alive at once, the one that takes
// more messages from its queue while its runs keep it (fetcher's top-up). Two invocations that
// both did kept each other's company for minutes, each alive for its own runs of the crawl's
// largest hosts, where one of them could serve them all side by side (docs/cost.md, "One
// invocation tops up"). The holder is an item of the lane with a lease: a holder that dies lets
// go when its lease ends, and one that ends lets go at once (ReleaseLane).

// Lane is who holds a lane, and until when.
type Lane struct {
	// Held: the caller holds it, until Until. Otherwise Until is when the holder's lease ends.
	Held  bool
	Until time.Time
}

const (
	attrLaneHolder = "holder"
	attrLaneUntil  = "until"
)

// laneKey is the key of a lane's holder item: one a lane (its queue), shared by every crawl.
func laneKey(lane string) table.Key { return table.Key{Part: lanePartKind, Sort: lane} }

// HoldLane takes or renews the lane for owner until `until`: when nobody holds it, its holder's
// lease has ended, or owner holds it already (and so the SDK's replay of this write, whose answer
// was lost, finds its own name and holds too). A refusal is one write, and says until when the
// holder holds it, for the caller to ask no sooner.
func (s *Hosts) HoldLane(ctx context.Context, lane, owner string, until time.Time) (Lane, error) {
	now := s.now().UnixMilli()
	_, err := s.t.Update(ctx, laneKey(lane), table.Update{Set: map[string]any{
		attrLaneHolder: owner, attrLaneUntil: until.UnixMilli(),
		table.TTLAttr: until.Add(24 * time.Hour).Unix(),
	}}, table.Or(table.NotExists(attrLaneHolder), table.Eq(attrLaneHolder, owner), table.Lt(attrLaneUntil, now)))
	cf, refused := table.IsConditionFailed(err)
	switch {
	case refused:
		return Lane{Until: time.UnixMilli(cf.Item.Int(attrLaneUntil))}, nil
	case err != nil:
		return Lane{}, fmt.Errorf("hold the lane %s: %w", lane, err)
	}
	return Lane{Held: true, Until: until}, nil
}

// ReleaseLane lets go of the lane that owner holds, for the next invocation to hold at once. A
// lane that another holds by now, or nobody, is left as it is.
func (s *Hosts) ReleaseLane(ctx context.Context, lane, owner string) error {
	_, err := s.t.Update(ctx, laneKey(lane), table.Update{Set: map[string]any{attrLaneUntil: int64(0)}},
		table.Eq(attrLaneHolder, owner))
	if _, refused := table.IsConditionFailed(err); refused || err == nil {
		return nil
	}
	return fmt.Errorf("release the lane %s: %w", lane, err)
}
