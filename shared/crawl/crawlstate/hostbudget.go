package crawlstate

import (
	"context"
	"fmt"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// A host's page budget (--max-pages-per-host, 100,000 by default) is a spider-trap guard that
// nearly every host of a crawl stays far below: a crawl of many small hosts paid a write of each
// host's budget item for it (a block per host and store), about a write a host. So a host's first
// pages are taken from an allowance instead, which costs a write per store, not per host:
//
//   - The crawl's allowance item (b# with no host after it, allowanceKey) counts the allowances
//     that stores took, perStore pages each (HostAllowance: a hundredth of the budget, at most
//     1,000), with one conditional write per store that keeps the count within all
//     (freeStores allowances). A store that holds an allowance admits up to perStore URLs of
//     every host with no write of the host's item, counting them in memory.
//   - Past its allowance for a host, or with none (allowances all taken, or a budget under 100
//     pages), a store takes the host's pages from the host's own item in blocks, as before
//     (block.go), but within maxPerHost-all, not maxPerHost.
//
// Why a host is never admitted more than maxPerHost pages, however many stores admit at once:
// its pages are those handed out free and those taken from its item. Each store hands out at
// most perStore free, and only under an allowance that the allowance item counts, so the free
// pages of a host, over all stores, are at most the count, which its condition holds to all; the
// item's pages are at most maxPerHost-all, its condition's bound. So at most maxPerHost in all.
// The allowance's write is numbered as every block write is (blockBudget.write): a replay of it,
// or a write whose answer was lost (settle), counts once, and a store that crashes mid-batch
// leaves its allowance unused, which only lowers what the host gets. The price: the pages of
// allowances never used on a host (at most all, 4% of the budget) are not admitted, so a trap
// host is stopped somewhere between maxPerHost-all and maxPerHost pages.

// freeStores is how many stores of a crawl take an allowance. A stack's schedule runs 2
// containers at once (each a store), so 4 covers them and a replacement of each; a store after
// those pays a block of each host's item it admits, as every store did before.
const freeStores = 4

// HostAllowance is, for a host budget of maxPerHost pages, the pages a store's allowance lets it
// admit of each host with no write of the host's item (a hundredth of the budget, at most 1,000;
// none for a budget under 100 pages, which is taken from the host's item page by page as before),
// and how many of those all the crawl's stores hold together at most (freeStores allowances).
func HostAllowance(maxPerHost int) (perStore, all int) {
	perStore = min(max(maxPerHost, 0)/100, maxBlock)
	return perStore, freeStores * perStore
}

// AllowanceKey is the item that counts the allowances the crawl's stores took of its host
// budgets (its attribute "pages"): among the hosts' budget items (b#), with no host.
func AllowanceKey(crawl string) table.Key { return allowanceKey(crawl) }

func allowanceKey(crawl string) table.Key { return budgetKey(crawl, "") }

// reserveHostPage takes one page of the host's budget of maxPerHost pages: free under the store's
// allowance while it lasts for the host, from the host's item after.
func (s *Runs) reserveHostPage(ctx context.Context, crawl, host string, maxPerHost int) error {
	perStore, all := HostAllowance(maxPerHost)
	hb := s.budget(budgetKey(crawl, host), attrPages)
	if perStore > 0 {
		free, err := s.freeHostPage(ctx, crawl, hb, perStore, all)
		if err != nil || free {
			return err
		}
	}
	return hb.take(ctx, s, maxPerHost-all)
}

// freeHostPage hands out one page of the host whose budget is hb under the store's allowance, if
// the store holds one and has handed out fewer than perStore pages of the host under it.
func (s *Runs) freeHostPage(ctx context.Context, crawl string, hb *blockBudget, perStore, all int) (bool, error) {
	hb.mu.Lock()
	spent := hb.free >= perStore
	hb.mu.Unlock()
	if spent {
		return false, nil
	}
	if held, err := s.allowance(ctx, crawl, perStore, all); err != nil || !held {
		return false, err
	}
	hb.mu.Lock()
	defer hb.mu.Unlock()
	if hb.free >= perStore { // another worker of this store took the last one meanwhile
		return false, nil
	}
	hb.free++
	return true, nil
}

// allowance says whether the store holds an allowance of the crawl's host budgets, taking one
// with a write the first time it is asked. An allowance is never given back, so a store refused
// one (all were taken) does not ask again.
func (s *Runs) allowance(ctx context.Context, crawl string, perStore, all int) (bool, error) {
	b := s.budget(allowanceKey(crawl), attrPages)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.settle(ctx, s); err != nil { // a write whose answer was lost: applied or not
		return false, err
	}
	switch {
	case b.holds:
		return true, nil
	case b.refused:
		return false, nil
	}
	n := int64(perStore)
	_, applied, err := b.write(ctx, s, n, table.Or(table.NotExists(b.attr), table.Le(b.attr, int64(all)-n)))
	if err != nil {
		return false, fmt.Errorf("take an allowance of %d pages a host of crawl %s: %w", perStore, crawl, err)
	}
	if !applied {
		b.refused = true
		return false, nil
	}
	b.holds = true
	return true, nil
}
