package fetcher

import (
	"context"
	"strings"
	"sync"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
)

// A fetch message's URLs are claimed together, in one write on their group's item
// (crawlstate.URLs.ClaimGroup), when the first of them comes to its claim: the URLs of a message
// of several (work.go) share one claim set, registered before the batch's work starts. A message
// of one URL claims it alone.

// claims holds one invocation's claim sets, by message and group.
type claims struct {
	mu   sync.Mutex
	sets map[claimRef]*claimSet
}

// claimRef names the URLs of one message that one claim takes: those of one group, re-queued
// from the same earlier owners (work.prev, joined).
type claimRef struct{ owner, group, prev string }

// claimSet is one claim's URLs, and what it got once made.
type claimSet struct {
	crawl string
	keys  []string
	once  sync.Once
	got   map[string]crawlstate.State
	err   error
}

type claimsKey struct{}

// withClaims returns ctx carrying the claim sets of the messages of several URLs in ds.
func withClaims(ctx context.Context, ds []*delivery) context.Context {
	c := &claims{sets: map[claimRef]*claimSet{}}
	for _, d := range ds {
		if !d.several() {
			continue
		}
		for _, w := range d.work {
			if w.bad != nil {
				continue // a URL that does not normalise claims nothing
			}
			ref := claimRef{owner: w.owner(), group: w.group, prev: strings.Join(w.prev(), " ")}
			set := c.sets[ref]
			if set == nil {
				set = &claimSet{crawl: w.msg.Crawl}
				c.sets[ref] = set
			}
			set.keys = append(set.keys, w.key)
		}
	}
	return context.WithValue(ctx, claimsKey{}, c)
}

// claimURL claims f's URL for its message, with the message's other URLs of its group when the
// message has several. It returns the URL's state before the claim, or crawlstate.ErrClaimed.
func (h *Handler) claimURL(ctx context.Context, f *fetched) (crawlstate.State, error) {
	var set *claimSet
	if c, ok := ctx.Value(claimsKey{}).(*claims); ok {
		c.mu.Lock()
		set = c.sets[claimRef{owner: f.owner, group: f.group, prev: strings.Join(f.w.prev(), " ")}]
		c.mu.Unlock()
	}
	if set == nil {
		set = &claimSet{crawl: f.msg.Crawl, keys: []string{f.key}}
	}
	set.once.Do(func() {
		set.got, set.err = h.claims.ClaimGroup(ctx, set.crawl, f.group, f.owner, f.w.prev(), h.cfg.Lease, set.keys)
	})
	if set.err != nil {
		return "", set.err
	}
	prev, ok := set.got[f.key]
	if !ok {
		return "", crawlstate.ErrClaimed
	}
	return prev, nil
}
