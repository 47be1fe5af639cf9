package crawlstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// SeedProgress is how far schedule has read a crawl's seed file (a URL list), read in chunks over
// several invocations: the bytes and lines read, whose Links messages are sent and named, and the
// seeds and bad lines among them. It lives on the crawl's item.
type SeedProgress struct {
	Offset   int64 `json:"o"`
	Line     int   `json:"l"`
	Accepted int   `json:"a"`
	Errors   int   `json:"e"`
	// Version is the version of the seed file being read ("" for the crawl's first reading), and
	// Digest the SHA-256 (hex) of the whole file once it is read: a later version that begins
	// with the same bytes is read on from Offset (extend.go).
	Version string `json:"v,omitempty"`
	Digest  string `json:"d,omitempty"`
}

// attrSeedProgress is the crawl item's attribute of its SeedProgress (JSON).
const attrSeedProgress = "seedProgress"

// SeedProgress reads how far the crawl's seed file was read: the zero SeedProgress for none.
func (s *Runs) SeedProgress(ctx context.Context, crawl string) (SeedProgress, error) {
	it, err := s.t.Get(ctx, CrawlKey(crawl))
	switch {
	case errors.Is(err, table.ErrNotFound):
		return SeedProgress{}, nil
	case err != nil:
		return SeedProgress{}, fmt.Errorf("read the seed progress of crawl %s: %w", crawl, err)
	}
	return progressOf(crawl, it)
}

// progressOf is the seed progress the crawl item it records.
func progressOf(crawl string, it table.Item) (SeedProgress, error) {
	var p SeedProgress
	if raw := it.String(attrSeedProgress); raw != "" {
		if err := json.Unmarshal([]byte(raw), &p); err != nil {
			return p, fmt.Errorf("seed progress of crawl %s: %w", crawl, err)
		}
	}
	return p, nil
}

// SaveSeedProgress moves the crawl's seed progress from from (as read) to to, on the condition
// that it is still from. It returns false when it is not: another delivery of the seed file's
// notification moved it first, and goes on from there. A write whose answer was lost, sent again
// by the SDK, finds its own progress and returns true.
func (s *Runs) SaveSeedProgress(ctx context.Context, crawl string, from, to SeedProgress) (bool, error) {
	was, err := json.Marshal(from)
	if err != nil {
		return false, err
	}
	now, err := json.Marshal(to)
	if err != nil {
		return false, err
	}
	cond := table.Eq(attrSeedProgress, string(was))
	if from == (SeedProgress{}) {
		cond = table.NotExists(attrSeedProgress)
	}
	_, err = s.t.Update(ctx, CrawlKey(crawl), table.Update{Set: map[string]any{attrSeedProgress: string(now)}}, cond)
	if cf, moved := table.IsConditionFailed(err); moved {
		return cf.Item.String(attrSeedProgress) == string(now), nil
	}
	if err != nil {
		return false, fmt.Errorf("save the seed progress of crawl %s: %w", crawl, err)
	}
	return true, nil
}
