package cost

import (
	"context"
	"slices"
	"sync"
)

// payersKey keys the crawls that the work under a context is for (WithPayers).
type payersKey struct{}

type payers struct {
	mu     sync.Mutex
	crawls []string
}

// WithPayers returns a context in which PayFor names the crawls that work is done for, and a
// function that returns the crawls named so far. The ledger wraps each invocation with it: an
// invocation's units go to the crawls its records name, and to those its handler named, such as
// the crawl that a seed file's notification (a record of no crawl) started.
func WithPayers(ctx context.Context) (context.Context, func() []string) {
	p := &payers{}
	return context.WithValue(ctx, payersKey{}, p), func() []string {
		p.mu.Lock()
		defer p.mu.Unlock()
		return slices.Clone(p.crawls)
	}
}

// PayFor names crawl as one that the work under ctx is for. Without WithPayers it does nothing.
func PayFor(ctx context.Context, crawl string) {
	p, _ := ctx.Value(payersKey{}).(*payers)
	if p == nil || crawl == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !slices.Contains(p.crawls, crawl) {
		p.crawls = append(p.crawls, crawl)
	}
}
