package crawlstate

import (
	"context"
	"fmt"
	"strings"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// Reading URLs: one (Get, Peek, Unsent) or all of a crawl's (EachURL), each as its group holds
// it (outcomes.go).

// Get returns the URL item, with its claim or outcome as its group holds them, or
// table.ErrNotFound.
func (s *URLs) Get(ctx context.Context, crawl, key string) (URL, error) {
	it, err := s.t.Get(ctx, URLKey(crawl, key))
	if err != nil {
		return URL{}, fmt.Errorf("get url %s: %w", key, err)
	}
	return s.withGroup(ctx, crawl, urlFrom(key, it))
}

// Peek returns the URL item as it is, without what its group holds: enough to tell whether it was
// admitted, and by which message.
func (s *URLs) Peek(ctx context.Context, crawl, key string) (URL, error) {
	it, err := s.t.Get(ctx, URLKey(crawl, key))
	if err != nil {
		return URL{}, fmt.Errorf("get url %s: %w", key, err)
	}
	return urlFrom(key, it), nil
}

// Unsent reports whether the Links message by must send the URL's fetch message again
// (URL.Unsent), with the URL's group; it returns table.ErrNotFound when the URL has no item. Its
// group is read only when by admitted it.
func (s *URLs) Unsent(ctx context.Context, crawl, key, by string) (bool, string, error) {
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

// EachURL calls fn for every URL item of the crawl, as Get reads it (for tests, audits and
// reports; not the hot path), with queries of the crawl's partitions. It holds what the crawl's groups say of each URL in memory (about 125
// bytes a URL, and its outcome: some 250 bytes a page fetched); a tally reads less (tally.go).
func (s *URLs) EachURL(ctx context.Context, crawl string, fn func(URL) error) error {
	heldBy := map[string]held{} // by group + "#" + the URL's short key
	err := EachInCrawl(ctx, s.t, crawl, groupKind, func(sort string, it table.Item) error {
		group := sort[len(groupKind):]
		for name, v := range it {
			if len(name) < 2 || !strings.Contains(perURLAttrs, name[:1]) {
				continue
			}
			k := group + "#" + name[1:] // a new string: the item's are let go
			h := heldBy[k]
			switch name[:1] {
			case outcomeLetter:
				raw, _ := v.(string)
				h.outcome, h.file = strings.Clone(raw), fileOf(it, raw) // the file's name is shared by its outcomes
			case ownerLetter:
				owner, _ := v.(string)
				h.owner = strings.Clone(owner)
			case leaseLetter:
				h.lease = it.Int(name)
			case redriveLetter:
				h.redrive = it.Bool(name)
			case tombstoneLetter:
				h.gone = true
			}
			heldBy[k] = h
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("scan the groups of %s: %w", crawl, err)
	}
	return EachInCrawl(ctx, s.t, crawl, urlKind, func(sort string, it table.Item) error {
		u := urlFrom(sort[len(urlKind):], it)
		if err := u.fromHeld(crawl, heldBy[GroupOf(u)+"#"+shortKey(u.Key)]); err != nil {
			return err
		}
		return fn(u)
	})
}
