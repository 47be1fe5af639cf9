package crawlstate

import (
	"context"
	"fmt"

	"github.com/crawlstack/crawlstack/shared/table"
)

// Reading URLs: one (Get, Peek, Unsent) or all of a crawl's (ScanURLs), each as its group holds
// it (outcomes.go).

// Get returns the URL item, with its claim or outcome as its group holds them, or
// table.ErrNotFound.
func (s *Store) Get(ctx context.Context, crawl, key string) (URL, error) {
	it, err := s.t.Get(ctx, URLKey(crawl, key))
	if err != nil {
		return URL{}, fmt.Errorf("get url %s: %w", key, err)
	}
	return s.withGroup(ctx, crawl, urlFrom(key, it))
}

// Peek returns the URL item as it is, without what its group holds: enough to tell whether it was
// admitted, and by which message.
func (s *Store) Peek(ctx context.Context, crawl, key string) (URL, error) {
	it, err := s.t.Get(ctx, URLKey(crawl, key))
	if err != nil {
		return URL{}, fmt.Errorf("get url %s: %w", key, err)
	}
	return urlFrom(key, it), nil
}

// Unsent reports whether the Links message by must send the URL's fetch message again
// (URL.Unsent), with the URL's group; it returns table.ErrNotFound when the URL has no item. Its
// group is read only when by admitted it.
func (s *Store) Unsent(ctx context.Context, crawl, key, by string) (bool, string, error) {
	u, err := s.Peek(ctx, crawl, key)
	if err != nil {
		return false, "", err
	}
	if !u.Unsent(by) {
		return false, GroupOf(u), nil
	}
	u, err = s.withGroup(ctx, crawl, u)
	if err != nil {
		return false, "", err
	}
	return u.Unsent(by), GroupOf(u), nil
}

// ScanURLs calls fn for every URL item of the crawl, as Get reads it (for tests, audits and
// reports; not the hot path). It holds the crawl's groups in memory, about a hundred bytes a URL.
func (s *Store) ScanURLs(ctx context.Context, crawl string, fn func(URL) error) error {
	groups := map[string]table.Item{}
	gprefix := groupKey(crawl, "")
	err := s.t.Scan(ctx, gprefix, func(key string, it table.Item) error {
		groups[key[len(gprefix):]] = it
		return nil
	})
	if err != nil {
		return fmt.Errorf("scan the groups of %s: %w", crawl, err)
	}
	prefix := URLKey(crawl, "")
	return s.t.Scan(ctx, prefix, func(key string, it table.Item) error {
		u := urlFrom(key[len(prefix):], it)
		if err := u.fromGroup(crawl, groups[GroupOf(u)]); err != nil {
			return err
		}
		return fn(u)
	})
}
