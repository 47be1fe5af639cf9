package fetcher

import (
	"context"
	"strings"
	"sync"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
)

// A fetch message's URLs are claimed together, in one write on their group's item
// (crawlstate.Store.ClaimGroup), when the first of its records comes to its claim: the records
// of a message of several URLs (split.go) share one claim set, registered as the batch is split.
// A message of one URL claims it alone.

// claims holds one invocation's claim sets, by message and group.
type claims struct {
	mu   sync.Mutex
	sets map[claimRef]*claimSet
}

// claimRef names the URLs of one message that one claim takes: those of one group, re-queued
// from the same earlier owners (message.Target.Prev, joined).
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

// withClaims returns ctx carrying p's records' claim sets.
func withClaims(ctx context.Context, p parted) context.Context {
	c := &claims{sets: map[claimRef]*claimSet{}}
	for _, pt := range p.parts {
		if pt.key == "" {
			continue // a part that does not decode claims nothing
		}
		ref := claimRef{owner: pt.msg, group: pt.group, prev: strings.Join(pt.prev, " ")}
		set := c.sets[ref]
		if set == nil {
			set = &claimSet{crawl: pt.crawl}
			c.sets[ref] = set
		}
		set.keys = append(set.keys, pt.key)
	}
	return context.WithValue(ctx, claimsKey{}, c)
}

// ownerOf is the claim's owner of a record: its message's id (a part of a message of several URLs
// is named id#i).
func ownerOf(recordID string) string {
	id, _, _ := strings.Cut(recordID, "#")
	return id
}

// claimURL claims f's URL for its message, with the message's other URLs of its group when the
// message has several. It returns the URL's state before the claim, or crawlstate.ErrClaimed.
func (h *Handler) claimURL(ctx context.Context, f *fetched) (crawlstate.State, error) {
	var set *claimSet
	if c, ok := ctx.Value(claimsKey{}).(*claims); ok {
		c.mu.Lock()
		set = c.sets[claimRef{owner: f.owner, group: f.group, prev: strings.Join(f.msg.Prev, " ")}]
		c.mu.Unlock()
	}
	if set == nil {
		set = &claimSet{crawl: f.msg.Crawl, keys: []string{f.key}}
	}
	set.once.Do(func() {
		set.got, set.err = h.state.ClaimGroup(ctx, set.crawl, f.group, f.owner, f.msg.Prev, h.cfg.Lease, set.keys)
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
