package fetcher

import (
	"context"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
)

// A batch's outcomes wait in a book until they are recorded, one write per fetch message (its
// URLs' group: crawlstate.Record) rather than one per URL. The pages' outcomes are recorded before
// their parse messages go out (the outbox, see storeCrawl), the others with them; a URL whose
// outcome could not be recorded fails, and its redelivery claims the URL again (the same owner
// may) and does it again.

// book holds the outcomes of one invocation's work.
type book struct {
	mu     sync.Mutex
	groups map[groupRef][]booked
	order  []groupRef
}

// groupRef names a group of a crawl (crawlstate.GroupOf).
type groupRef struct{ crawl, group string }

// booked is one URL's outcome.
type booked struct {
	n   int // the work's place in the batch (work.n)
	out crawlstate.Outcome
}

type bookKey struct{}

// withBook returns ctx carrying a fresh book for one invocation.
func withBook(ctx context.Context) (context.Context, *book) {
	b := &book{groups: map[groupRef][]booked{}}
	return context.WithValue(ctx, bookKey{}, b), b
}

// add books f's outcome, to be recorded with its group's others.
func (b *book) add(f *fetched, out crawlstate.Outcome) {
	out.Owner = f.owner
	ref := groupRef{crawl: f.msg.Crawl, group: f.group}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.groups[ref]; !ok {
		b.order = append(b.order, ref)
	}
	b.groups[ref] = append(b.groups[ref], booked{n: f.w.n, out: out})
}

// take removes and returns the booked groups of crawl ("" for every crawl).
func (b *book) take(crawl string) map[groupRef][]booked {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[groupRef][]booked{}
	kept := b.order[:0]
	for _, ref := range b.order {
		if crawl != "" && ref.crawl != crawl {
			kept = append(kept, ref)
			continue
		}
		out[ref] = b.groups[ref]
		delete(b.groups, ref)
	}
	b.order = kept
	return out
}

// recordOne records f's outcome: with its group's, in the invocation's book, or at once when
// there is no book.
func (h *Handler) recordOne(ctx context.Context, f *fetched, out crawlstate.Outcome) error {
	out.Status, out.Bytes, out.Change = f.status, f.bytes, f.change(out.State)
	if b, ok := ctx.Value(bookKey{}).(*book); ok {
		b.add(f, out)
		return nil
	}
	out.Owner = f.owner
	lost, err := h.outcomes.Record(ctx, f.msg.Crawl, f.group, []crawlstate.Outcome{out})
	if err == nil && len(lost) > 0 {
		h.log.Warn("lost the claim before finishing", "url", f.msg.URL)
	}
	if err == nil && len(lost) == 0 {
		h.giveBackSkipped(ctx, f.msg.Crawl, []crawlstate.Outcome{out}, nil)
	}
	return err
}

// recordConcurrency bounds the groups recorded at once.
const recordConcurrency = 10

// record writes the booked outcomes of crawl ("" for all), one write per group, each tried again
// in place if it fails (again: a failed write would have its pages fetched again). It returns the
// work (by work.n) whose outcomes were not recorded because the write failed (to be delivered again) and
// those whose URLs another owner took over meanwhile (theirs now: nothing to do).
func (h *Handler) record(ctx context.Context, crawl string) (failed, lost map[int]bool) {
	failed, lost = map[int]bool{}, map[int]bool{}
	b, ok := ctx.Value(bookKey{}).(*book)
	if !ok {
		return failed, lost
	}
	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(recordConcurrency)
	for ref, entries := range b.take(crawl) {
		g.Go(func() error {
			outs := make([]crawlstate.Outcome, len(entries))
			for i, e := range entries {
				outs[i] = e.out
			}
			var gone []string
			err := h.again(ctx, func() (err error) {
				gone, err = h.outcomes.Record(ctx, ref.crawl, ref.group, outs)
				return err
			})
			taken := map[string]bool{}
			for _, k := range gone {
				taken[k] = true
			}
			if err == nil {
				h.giveBackSkipped(ctx, ref.crawl, outs, taken)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				h.log.Error("record the outcomes of a fetch message", "crawl", ref.crawl, "group", ref.group,
					"urls", len(outs), "err", err.Error())
			}
			for _, e := range entries {
				switch {
				case taken[e.out.Key]:
					h.log.Warn("lost the claim before finishing", "url", e.out.URL)
					lost[e.n] = true
				case err != nil:
					failed[e.n] = true
				}
			}
			return nil
		})
	}
	_ = g.Wait() // every group's outcome is in failed or lost
	return failed, lost
}
