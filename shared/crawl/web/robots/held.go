package robots

import (
	"context"
	"net/url"
)

// Held is one host's robots.txt as a Cache holds it, with the product token it is matched for:
// what a check made elsewhere needs to decide as Check decides. The fetcher hands the rules of
// each page's host to parse with the page, and parse refuses the links those rules disallow before
// they are admitted (the fetcher still checks every URL it fetches: rules can change).
type Held struct {
	// Host is the scheme, host and port the rules are for ("http://example.com:80").
	Host string
	// Agent is the product token whose group is matched.
	Agent string
	// Body is the robots.txt as read (its first MaxBytes).
	Body string
}

// Held returns the robots.txt the cache holds for u's host, matched for the product token that
// Check would use under ctx, when its body decides (it answered 2xx), its entry is unexpired and
// the body is at most maxBody bytes. Rules that could not be read (5xx, 429, unreachable, refused
// by the guard) or that allow all (4xx, too many redirects) are never held: a check elsewhere must
// refuse nothing early for them. Held never fetches.
func (c *Cache) Held(ctx context.Context, u *url.URL, maxBody int) (Held, bool) {
	key, err := hostKey(u)
	if err != nil {
		return Held{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return Held{}, false
	}
	e := el.Value.(*entry)
	if !c.now().Before(e.expires) || e.rules.verdict != "" || len(e.rules.body) > maxBody {
		return Held{}, false
	}
	token := c.token
	if ua, ok := ctx.Value(agentKey{}).(string); ok {
		token = ProductToken(ua)
	}
	return Held{Host: key, Agent: token, Body: e.rules.body}, true
}

// Allows says whether the held rules allow u, exactly as Check decides with the same rules and
// product token. applies is false when u is not of the rules' host (or not an http(s) URL with a
// host): the rules say nothing about it.
func (h Held) Allows(u *url.URL) (allowed, applies bool) {
	key, err := hostKey(u)
	if err != nil || key != h.Host {
		return true, false
	}
	r := rules{body: h.Body}
	return r.decide(h.Agent, u).Allowed, true
}

// HostKey is the scheme, host and port that u's robots.txt is kept under ("http://example.com:80"),
// as Held.Host names it.
func HostKey(u *url.URL) (string, error) { return hostKey(u) }
