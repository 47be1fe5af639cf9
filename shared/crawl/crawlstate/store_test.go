package crawlstate

import (
	"context"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
)

// TestPartsCountInOneSequence: a store's URLs and Runs write a crawl's counters as one writer, to
// one shard and in one sequence (countwrite.go). Parts that numbered their writes apart would each
// start at seq 1, and a part's write would be refused on a shard that another part of the same
// store wrote first. Hosts writes no counter: its notes of a host have an item of their own
// (hostnotes.go), which Counters reads.
func TestPartsCountInOneSequence(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	if _, err := s.URLs.Admit(ctx, "c1", "k1", "https://a.test/", "https://a.test/", 0, "L1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Hosts.SlowDown(ctx, "c1", "a.test", time.Second); err != nil {
		t.Fatal(err)
	}
	if err := s.Runs.CountStopRefusal(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	shard, err := s.t.Get(ctx, s.shardKey("c1"))
	if err != nil {
		t.Fatal(err)
	}
	if got := shard.Int(s.seqAttr()); got != 2 {
		t.Errorf("the shard holds the store's write %d, want its 2nd: one sequence for all its parts", got)
	}
	c, err := s.CountersWithHosts(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if c.Seen != 1 || c.StopRefused != 1 || c.Classes[errclass.Stopped] != 0 || len(c.Throttled) != 1 || c.Throttled[0].Host != "a.test" {
		t.Errorf("counters: seen %d, stopped refusals %d (class stopped %d), throttled %v; want 1, 1 (0: a refusal is no URL) and a.test",
			c.Seen, c.StopRefused, c.Classes[errclass.Stopped], c.Throttled)
	}
}
