package crawlstate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// Page budgets in blocks: the crawl's (the crawl item's attrBudget) and each host's (its budget
// item's attrPages). The attribute counts the pages that stores have taken, in blocks, never more
// than the budget; each store hands out the pages of its block one by one. The attribute grows
// by blocks, and shrinks only by pages given back (ReturnPages, ReleaseBudgets), whose URLs ended
// without a page or which no URL took.

// maxBlock is the most pages one block takes, whatever the budget: a store that goes with its
// block unused leaves at most this many pages of the budget unused.
const maxBlock = 1000

// tailShare: once less than tailShare blocks of the budget are left, a block is a tailShare-th
// of what is left (at least 1 page), so the pages that stores hold unused near the end of the
// budget shrink with it. It costs a few dozen more writes at the end of the budget (for blocks of
// 100: about 30 for the last 800 pages, and one a page for the last 15).
const tailShare = 8

// BlockSize is how many pages of a budget of maxPages a store takes in one write: a hundredth of
// the budget, at least 1 and at most 1,000. A budget of 10,000 pages takes 138 writes of its item
// in all (92 blocks, and smaller ones at the end), where it took 10,000 before; a budget of under
// 200 pages takes one write per page, as before. A host's budget is taken so only past a store's
// allowance of it (hostbudget.go): a host's default budget of 100,000 pages takes no write for its
// first 1,000 pages in a store, then blocks of 960.
func BlockSize(maxPages int) int { return min(max(maxPages/100, 1), maxBlock) }

// blockBudget is one store's block of a budget.
type blockBudget struct {
	key  table.Key // the item that counts the pages taken
	attr string    // and its attribute
	mu   sync.Mutex
	left int // pages of the block not handed out yet
	// seen is the item's count as this store last saw it: its guess of the pages taken.
	seen int64
	// usedUp is the budget (maxPages) that the table showed used up at usedUpAt: no block will
	// come until pages are given back (by another store: see usedUpRecheck).
	usedUp   int
	usedUpAt time.Time
	// holds is set once this store took a block: it admits the budget's URLs, and pages given back
	// to it go to its block, in memory.
	holds bool
	// returned are the pages given back to a store that holds no block (a fetch container), not yet
	// written to the table.
	returned int
	// free are the pages of a host's budget this store handed out under its allowance, and refused
	// says the store was refused an allowance (hostbudget.go).
	free    int
	refused bool
	// seq numbers this store's writes of the budget's item, as its counter writes are numbered
	// (countwrite.go): a write sets q<writer> to its seq, and a replay finds it there. lost is a
	// write whose answer the SDK could not get, applied or not: the item's q<writer> tells which,
	// read before the store's next write of the budget (settle).
	seq  int64
	lost *budgetWrite
}

// budgetWrite is a write of a budget's item: its seq, and the pages it takes (n > 0) or gives
// back (n < 0).
type budgetWrite struct {
	seq int64
	n   int64
}

// settle learns whether the write whose answer was lost was applied, from the budget's item, and
// books it: a block taken is this store's to hand out, and pages not given back are gathered to
// give back again. b.mu is held.
func (b *blockBudget) settle(ctx context.Context, s *Runs) error {
	w := b.lost
	if w == nil {
		return nil
	}
	it, err := s.t.Get(ctx, b.key)
	if err != nil && !errors.Is(err, table.ErrNotFound) {
		return fmt.Errorf("read the budget %s: %w", b.key, err)
	}
	applied := it.Int(s.seqAttr()) >= w.seq
	switch {
	case applied && w.n > 0:
		b.left, b.holds = b.left+int(w.n), true
	case !applied && w.n < 0:
		b.returned += int(-w.n)
	}
	b.lost, b.seen = nil, it.Int(b.attr)
	return nil
}

// write adds n to the budget's count of pages taken, numbered, if cond holds. It returns the
// count after the write, or the count as it was when cond (or the seq's) refused it; applied
// tells which. A write the table answered with an error is kept as lost, for settle.
func (b *blockBudget) write(ctx context.Context, s *Runs, n int64, cond table.Cond) (count int64, applied bool, err error) {
	q := s.seqAttr()
	b.seq++
	set := map[string]any{q: b.seq}
	if strings.HasPrefix(b.key.Sort, budgetKind) {
		// A host's budget lives its crawl's retention past its last write, which comes before the
		// crawl's end: no host item of a finished crawl is left without a time to live.
		set[table.TTLAttr] = s.now().Add(s.retention).Unix()
	}
	it, err := s.t.Update(ctx, b.key, table.Update{Add: map[string]int64{b.attr: n}, Set: set},
		table.And(table.Or(table.NotExists(q), table.Lt(q, b.seq)), cond))
	cf, refused := table.IsConditionFailed(err)
	switch {
	case refused && cf.Item.Int(q) >= b.seq: // applied: this is its replay
		return cf.Item.Int(b.attr), true, nil
	case refused:
		return cf.Item.Int(b.attr), false, nil // 0 when there is no item
	case err != nil:
		b.lost = &budgetWrite{seq: b.seq, n: n}
		return 0, false, err
	}
	return it.Int(b.attr), true, nil
}

// usedUpRecheck is how long a store takes the table's word that a budget is used up: then it
// reads the budget's item again, since other stores may have given pages back (ReturnPages). A
// link over the budget costs no write meanwhile, and a read per store and recheck after.
const usedUpRecheck = 5 * time.Second

// budget is this store's block of the budget counted by key's attr. A store keeps one such entry
// (about a hundred bytes) for the crawl, and one for each host it admitted URLs of.
func (s *Runs) budget(key table.Key, attr string) *blockBudget {
	if b, ok := s.budgets.Load(key); ok {
		return b.(*blockBudget)
	}
	b, _ := s.budgets.LoadOrStore(key, &blockBudget{key: key, attr: attr})
	return b.(*blockBudget)
}

// take hands out one page, taking a new block from the table when the store's block is empty.
func (b *blockBudget) take(ctx context.Context, s *Runs, maxPages int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.settle(ctx, s); err != nil {
		return err
	}
	if b.left == 0 {
		if b.usedUp > 0 && maxPages <= b.usedUp {
			if s.now().Sub(b.usedUpAt) < usedUpRecheck {
				return ErrBudget // the table said so a moment ago
			}
			it, err := s.t.Get(ctx, b.key)
			if err != nil {
				return fmt.Errorf("read the budget %s: %w", b.key, err)
			}
			b.seen, b.usedUp = it.Int(b.attr), 0
		}
		n, err := b.takeBlock(ctx, s, maxPages)
		if err != nil {
			return err
		}
		b.left, b.holds = n, true
	}
	b.left--
	return nil
}

// giveBack returns a page that take handed out and that was not used after all.
func (b *blockBudget) giveBack() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.left++
}

// takeBlock takes a block of pages from the budget's item with one conditional update that adds
// the block to the pages taken if they stay within maxPages. The condition also asks for enough
// pages left for the block's size (tailShare times it, see there), so a store whose guess of what
// is left was stale learns the count from the failed write and asks again for a fitting block.
func (b *blockBudget) takeBlock(ctx context.Context, s *Runs, maxPages int) (int, error) {
	for range 100 { // only workers that raced us for the budget make it go round again
		left := int64(maxPages) - b.seen
		if left <= 0 {
			b.usedUp, b.usedUpAt = maxPages, s.now()
			return 0, ErrBudget
		}
		n := min(int64(BlockSize(maxPages)), max(left/tailShare, 1))
		need := n * tailShare // pages that must be left to take n of them
		if n == 1 {
			need = 1
		}
		count, applied, err := b.write(ctx, s, n, table.Or(table.NotExists(b.attr), table.Le(b.attr, int64(maxPages)-need)))
		if err != nil {
			return 0, fmt.Errorf("reserve %d pages of the budget %s: %w", n, b.key, err)
		}
		b.seen = count
		if applied {
			return int(n), nil
		}
	}
	return 0, errclass.Errorf(errclass.Internal, "reserve the budget %s: too many workers raced for it", b.key)
}
