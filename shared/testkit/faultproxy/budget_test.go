package faultproxy_test

import (
	"errors"
	"testing"

	"github.com/crawlstack/crawlstack/shared/aws/dynamotable"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/port/table"
	"github.com/crawlstack/crawlstack/shared/testkit/awstest"
	"github.com/crawlstack/crawlstack/shared/testkit/faultproxy"
)

// TestIntegrationAReplayedAllowanceWriteCountsOnce: a store's first page of a host takes its
// allowance of the crawl's host budgets (call 1), which DynamoDB applies and whose answer is lost:
// the SDK replays it, its condition fails on the store's own write, and the store recognises it.
// The allowance item, read directly, counts the allowance once; the store hands out the host's
// first 1,000 pages with no write of the host's item, and the next from a block of it.
func TestIntegrationAReplayedAllowanceWriteCountsOnce(t *testing.T) {
	for _, kind := range []faultproxy.Kind{faultproxy.Apply500, faultproxy.ApplyDrop} {
		t.Run(string(kind), func(t *testing.T) {
			r := newRig(t, faultproxy.Schedule{Seed: 1, Script: map[uint64]faultproxy.Kind{1: kind}}, 0, 0)
			_, _, name := awstest.DynamoTable(t, "fp")
			ctx := ctxT(t)
			via := crawlstate.New(dynamotable.New(r.via.ddb, name))
			direct := dynamotable.New(r.direct.ddb, name)
			const crawl, host, maxPerHost = "crawl-1", "h.test", 100_000
			pages := func(key table.Key) int64 {
				it, err := direct.Get(ctx, key)
				if errors.Is(err, table.ErrNotFound) {
					return 0
				}
				if err != nil {
					t.Fatal(err)
				}
				return it.Int("pages")
			}
			perStore, all := crawlstate.HostAllowance(maxPerHost)
			for i := range perStore {
				if err := via.ReserveBudget(ctx, crawl, host, 0, maxPerHost); err != nil {
					t.Fatalf("page %d: %v", i, err)
				}
			}
			fs := r.p.Faults()
			if len(fs) != 1 || fs[0].Kind != kind || fs[0].Op != "UpdateItem" {
				t.Fatalf("fault log = %v, want one %s of the allowance's UpdateItem", fs, kind)
			}
			if got := pages(crawlstate.AllowanceKey(crawl)); got != int64(perStore) {
				t.Errorf("the allowances count %d pages, want one allowance of %d", got, perStore)
			}
			if got := pages(crawlstate.BudgetKey(crawl, host)); got != 0 {
				t.Errorf("the host's item counts %d pages after its first %d, want none written", got, perStore)
			}
			if err := via.ReserveBudget(ctx, crawl, host, 0, maxPerHost); err != nil {
				t.Fatal(err)
			}
			if got, want := pages(crawlstate.BudgetKey(crawl, host)), int64(crawlstate.BlockSize(maxPerHost-all)); got != want {
				t.Errorf("the host's item counts %d pages past the allowance, want a block of %d", got, want)
			}
		})
	}
}
