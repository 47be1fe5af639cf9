package localrun

import (
	"context"
	"log/slog"
	"sync"

	"github.com/crawlstack/crawlstack/shared/port/turn"
)

// Spares: a source's handler that calls turn.GiveBack while it waits (fetch, on its WARC file's
// sync) lends its turn to one of the source's spare handler loops, which takes the next batch its
// pollers received meanwhile. So at most Pollers of the source's batches are worked on at once, as
// without spares, and a slow disk does not idle them: Little's law asks for more batches in hand
// while each waits longer. Spare bounds how many more: Pollers + Spare batches in handlers at
// most, waiting or not, and Pollers more received ahead.

// lender counts a source's turns lent by waiting handlers and taken by its spares.
type lender struct {
	mu      sync.Mutex
	lent    int           // handlers between turn.GiveBack and their return
	taken   int           // spares with a batch, or about to take one
	changed chan struct{} // closed, and replaced, whenever lent or taken changes
}

func newLender() *lender { return &lender{changed: make(chan struct{})} }

// take waits until a turn is lent and not taken, and takes it. It returns false when ctx ends.
func (l *lender) take(ctx context.Context) bool {
	for {
		l.mu.Lock()
		if l.taken < l.lent {
			l.taken++
			l.mu.Unlock()
			return true
		}
		ch := l.changed
		l.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

// update changes the counts by the deltas and wakes the spares that wait in take.
func (l *lender) update(lent, taken int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lent += lent
	l.taken += taken
	close(l.changed)
	l.changed = make(chan struct{})
}

// lend returns ctx for one invocation, whose turn.GiveBack lends the invocation's turn (once), and
// the function to call when the invocation returns, which ends the loan.
func (l *lender) lend(ctx context.Context) (context.Context, func()) {
	if l == nil {
		return ctx, func() {}
	}
	var once sync.Once
	lent := false
	give := func() {
		once.Do(func() {
			lent = true
			l.update(1, 0)
		})
	}
	end := func() {
		once.Do(func() {}) // a GiveBack after the return lends nothing
		if lent {
			l.update(-1, 0)
		}
	}
	return turn.With(ctx, give), end
}

// handleSpare is one of s's spare handler loops: it takes a batch received by s's pollers only
// while a turn is lent, and holds the turn until its handler returns.
func (r *Runner) handleSpare(rctx, hctx context.Context, s Source, batches <-chan received, l *lender, log *slog.Logger) {
	var deletes sync.WaitGroup
	defer deletes.Wait()
	for l.take(rctx) {
		b, ok := <-batches
		if ok {
			r.handleOne(rctx, hctx, s, b, l, &deletes, log)
		}
		l.update(0, -1)
		if !ok {
			return
		}
	}
}
