package crawlstate

import (
	"context"
	"fmt"

	"github.com/crawlstack/crawlstack/shared/table"
)

// Reading URLs: one (Get, Peek) or all of a crawl's (ScanURLs), each with its outcome where its
// owner's group recorded one (outcomes.go).

// Get returns the URL item, with its outcome if its owner's group recorded one (see Record), or
// table.ErrNotFound.
func (s *Store) Get(ctx context.Context, crawl, key string) (URL, error) {
	it, err := s.t.Get(ctx, URLKey(crawl, key))
	if err != nil {
		return URL{}, fmt.Errorf("get url %s: %w", key, err)
	}
	return s.withOutcome(ctx, crawl, urlFrom(key, it))
}

// Peek returns the URL item as it is, without the outcome its owner's group may hold: enough to
// tell whether a worker holds it (URL.Unsent).
func (s *Store) Peek(ctx context.Context, crawl, key string) (URL, error) {
	it, err := s.t.Get(ctx, URLKey(crawl, key))
	if err != nil {
		return URL{}, fmt.Errorf("get url %s: %w", key, err)
	}
	return urlFrom(key, it), nil
}

// ScanURLs calls fn for every URL item of the crawl, with its outcome as Get reads it (for tests,
// audits and reports; not the hot path). It holds the crawl's recorded outcomes in memory, about
// a hundred bytes a URL.
func (s *Store) ScanURLs(ctx context.Context, crawl string, fn func(URL) error) error {
	groups := map[string]table.Item{}
	gprefix := groupKey(crawl, "")
	err := s.t.Scan(ctx, gprefix, func(key string, it table.Item) error {
		groups[key[len(gprefix):]] = it
		return nil
	})
	if err != nil {
		return fmt.Errorf("scan the outcomes of %s: %w", crawl, err)
	}
	prefix := URLKey(crawl, "")
	return s.t.Scan(ctx, prefix, func(key string, it table.Item) error {
		u := urlFrom(key[len(prefix):], it)
		if g, ok := groups[GroupOf(u.Owner)]; ok && u.State == Queued && u.Owner != "" {
			if raw := g.String(outcomeAttr(u.Key)); raw != "" && !g.Has(takenAttr(u.Key)) {
				if err := u.apply(raw); err != nil {
					return err
				}
			}
		}
		return fn(u)
	})
}
