// Package robots decides whether the crawler may fetch a URL, following RFC 9309.
//
// Matching uses jimsmart/grobotstxt, a Go port of Google's robots.txt parser, which is the
// reference implementation the RFC was written from: longest match wins, Allow wins ties, '*'
// and '$' wildcards, case-insensitive product tokens, merged groups, BOM and CR/CRLF lines.
// grobotstxt has no Crawl-delay (Google ignores it), so Crawl-delay is read with
// temoto/robotstxt's parser from the same bytes. temoto picks a group by the longest group name
// that prefixes the product token, or "*"; for the usual files this is the group grobotstxt
// matches. A file temoto cannot parse gives no Crawl-delay; matching is unaffected.
//
// What the status of /robots.txt means (RFC 9309 §2.3.1):
//   - 2xx: the first MaxBytes (500 KiB) are parsed; the rest is ignored.
//   - 3xx followed up to 5 times; more redirects mean unavailable: allow all.
//   - 4xx (401, 403 and 404 included): unavailable: allow all. 429 is treated like 5xx.
//   - 5xx, 429, or an unreachable server (DNS, connect, TLS, timeout): disallow all, cached
//     for ErrorTTL only, so the host is tried again soon.
//   - a robots.txt fetch refused by the SSRF guard: disallow all (the page fetch would be refused too).
package robots

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/jimsmart/grobotstxt"
	"github.com/temoto/robotstxt"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/web/httpfetch"
)

// Limits and cache policy.
const (
	MaxBytes      = 500 << 10        // the part of a robots.txt that is parsed (RFC 9309 §2.5)
	MaxRedirects  = 5                // redirects followed for robots.txt (RFC 9309 §2.3.1.2)
	MaxTTL        = 24 * time.Hour   // rules are never cached longer (RFC 9309 §2.4)
	ErrorTTL      = 5 * time.Minute  // how long "unreachable: disallow all" is cached
	MaxCrawlDelay = 60 * time.Second // a larger Crawl-delay is clamped to this
	DefaultSize   = 10000            // hosts kept in the cache
)

// Decision is the answer for one URL.
type Decision struct {
	Allowed    bool
	CrawlDelay time.Duration // the host's Crawl-delay for our group, clamped to MaxCrawlDelay
	Reason     string        // why, for logs and the recorded outcome
	// RetryAfter is set when the disallow is temporary (robots.txt answered 5xx or 429, or was
	// unreachable): ask again after this long rather than give the URL up.
	RetryAfter time.Duration
}

// Getter fetches robots.txt. *httpfetch.Client is one; the body must be cut at maxBody, not refused.
type Getter interface {
	GetLimited(ctx context.Context, rawURL string, maxBody int64, maxRedirects int) (*httpfetch.Response, error)
}

var _ Getter = (*httpfetch.Client)(nil)

// Cache fetches, keeps and applies robots.txt files, one per scheme, host and port.
// Concurrent checks for the same host share one fetch. It is safe for concurrent use.
type Cache struct {
	get   Getter
	token string
	ttl   time.Duration
	size  int
	now   func() time.Time

	mu       sync.Mutex
	entries  map[string]*list.Element // of *entry, most recently used at the front
	lru      *list.List
	inflight map[string]*call
	onJoin   func() // tests: called when a check joins a fetch already in flight
}

// rules is what is kept of one robots.txt.
type rules struct {
	verdict    string // "" when body decides; otherwise "allow" or "disallow" for all paths
	reason     string
	retryAfter time.Duration // for a temporary disallow
	body       string
	crawlDelay time.Duration
}

type entry struct {
	key     string
	rules   *rules
	expires time.Time
}

type call struct {
	done  chan struct{}
	rules *rules
}

// New returns a Cache that fetches with g and matches the group of userAgent's product token
// ("crawlstack" for "crawlstack/0.1 (+https://example.com/bot)"). ttl is how long rules are
// kept: 0 or more than MaxTTL means MaxTTL.
func New(g Getter, userAgent string, ttl time.Duration) *Cache {
	if ttl <= 0 || ttl > MaxTTL {
		ttl = MaxTTL
	}
	return &Cache{
		get:      g,
		token:    ProductToken(userAgent),
		ttl:      ttl,
		size:     DefaultSize,
		now:      time.Now,
		entries:  make(map[string]*list.Element),
		lru:      list.New(),
		inflight: make(map[string]*call),
	}
}

// ProductToken returns the product token of a User-Agent: its leading run of letters, digits,
// '_' and '-' (RFC 9309 §2.2.1).
func ProductToken(userAgent string) string {
	ua := strings.TrimSpace(userAgent)
	end := strings.IndexFunc(ua, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
	})
	if end >= 0 {
		ua = ua[:end]
	}
	return ua
}

// Check decides whether u may be fetched. It fails only when ctx ends first or u has no
// http(s) scheme and host; every robots.txt outcome is a Decision.
func (c *Cache) Check(ctx context.Context, u *url.URL) (Decision, error) {
	key, err := hostKey(u)
	if err != nil {
		return Decision{}, err
	}
	r, err := c.rulesFor(ctx, key)
	if err != nil {
		return Decision{}, err
	}
	token := c.token
	if ua, ok := ctx.Value(agentKey{}).(string); ok {
		token = ProductToken(ua)
	}
	return r.decide(token, u), nil
}

type agentKey struct{}

// WithUserAgent has Check match the group of userAgent's product token instead of the cache's
// own: the User-Agent of one crawl (its spec's). The cached files are the same for every agent.
func WithUserAgent(ctx context.Context, userAgent string) context.Context {
	return context.WithValue(ctx, agentKey{}, userAgent)
}

func (r *rules) decide(token string, u *url.URL) Decision {
	switch r.verdict {
	case "allow":
		return Decision{Allowed: true, Reason: r.reason}
	case "disallow":
		return Decision{Allowed: false, Reason: r.reason, RetryAfter: r.retryAfter}
	}
	if u.Path == "/robots.txt" {
		// RFC 9309 2.2.2: the /robots.txt URI is implicitly allowed (a crawl that reads sitemaps
		// fetches it for its Sitemap: lines).
		return Decision{Allowed: true, Reason: "robots.txt is implicitly allowed", CrawlDelay: r.crawlDelay}
	}
	m := grobotstxt.NewRobotsMatcher()
	allowed := m.AgentAllowed(r.body, token, u.String())
	d := Decision{Allowed: allowed, CrawlDelay: r.crawlDelay}
	switch line := m.MatchingLine(); {
	case line == 0 && allowed:
		d.Reason = "robots.txt: no rule matches"
	case allowed:
		d.Reason = fmt.Sprintf("robots.txt: allowed by line %d", line)
	default:
		d.Reason = fmt.Sprintf("robots.txt: disallowed by line %d", line)
	}
	return d
}

// hostKey is scheme://host:port with the default port made explicit.
func hostKey(u *url.URL) (string, error) {
	if u == nil {
		return "", errors.New("robots: no URL")
	}
	scheme := strings.ToLower(u.Scheme)
	if (scheme != "http" && scheme != "https") || u.Hostname() == "" {
		return "", fmt.Errorf("robots: %q is not an http(s) URL with a host", u.Redacted())
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	host := strings.ToLower(u.Hostname())
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return scheme + "://" + host + ":" + port, nil
}

// Prefetch starts fetching the robots.txt that decides u, unless it is cached or already being
// fetched, and returns without waiting: a later Check of the host finds the rules, or joins the
// fetch. A crawl warms the cache this way for its seeds' hosts while it sets up, so its first
// Check waits less. The fetch is the one Check would make, under ctx's values (a crawl's
// User-Agent and headers) and not its cancellation.
func (c *Cache) Prefetch(ctx context.Context, u *url.URL) error {
	key, err := hostKey(u)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cachedOrFetching(ctx, key)
	return nil
}

// rulesFor returns the cached rules for key, or fetches them, sharing the fetch with
// concurrent callers.
func (c *Cache) rulesFor(ctx context.Context, key string) (*rules, error) {
	c.mu.Lock()
	r, cl := c.cachedOrFetching(ctx, key)
	c.mu.Unlock()
	if r != nil {
		return r, nil
	}
	select {
	case <-cl.done:
		return cl.rules, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("robots.txt for %s: %w", key, ctx.Err())
	}
}

// cachedOrFetching returns key's unexpired rules, or else the fetch of them in flight, which it
// starts if there is none. c.mu must be held.
func (c *Cache) cachedOrFetching(ctx context.Context, key string) (*rules, *call) {
	if el, ok := c.entries[key]; ok {
		e := el.Value.(*entry)
		if c.now().Before(e.expires) {
			c.lru.MoveToFront(el)
			return e.rules, nil
		}
		c.lru.Remove(el)
		delete(c.entries, key)
	}
	cl, ok := c.inflight[key]
	if !ok {
		cl = &call{done: make(chan struct{})}
		c.inflight[key] = cl
		// The fetch outlives a cancelled first caller: others may be waiting for it.
		go c.fetch(context.WithoutCancel(ctx), key, cl)
	} else if c.onJoin != nil {
		c.onJoin()
	}
	return nil, cl
}

func (c *Cache) fetch(ctx context.Context, key string, cl *call) {
	r, ttl := c.load(ctx, key)
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.inflight, key)
	c.entries[key] = c.lru.PushFront(&entry{key: key, rules: r, expires: c.now().Add(ttl)})
	for c.lru.Len() > c.size {
		old := c.lru.Remove(c.lru.Back()).(*entry)
		delete(c.entries, old.key)
	}
	cl.rules = r
	close(cl.done)
}

// load fetches and reads one robots.txt, and says how long the result may be kept.
func (c *Cache) load(ctx context.Context, key string) (*rules, time.Duration) {
	resp, err := c.get.GetLimited(ctx, key+"/robots.txt", MaxBytes, MaxRedirects)
	if err != nil {
		switch errclass.Of(err) {
		case errclass.Redirect:
			return &rules{verdict: "allow", reason: "robots.txt: too many redirects, unavailable: allow all"}, c.ttl
		case errclass.SSRF:
			return &rules{verdict: "disallow", reason: "robots.txt: refused by the address guard: disallow all"}, c.ttl
		}
		return &rules{verdict: "disallow", reason: fmt.Sprintf("robots.txt unreachable (%s): disallow all", errclass.Of(err)),
			retryAfter: c.errorTTL()}, c.errorTTL()
	}
	switch s := resp.Status; {
	case s >= 200 && s < 300:
		return parse(resp.Body, c.token), c.ttl
	case s == 429 || s >= 500:
		return &rules{verdict: "disallow", reason: fmt.Sprintf("robots.txt status %d: disallow all", s),
			retryAfter: c.errorTTL()}, c.errorTTL()
	default: // 3xx not followed, 4xx
		return &rules{verdict: "allow", reason: fmt.Sprintf("robots.txt status %d, unavailable: allow all", s)}, c.ttl
	}
}

func (c *Cache) errorTTL() time.Duration { return min(ErrorTTL, c.ttl) }

func parse(body []byte, token string) *rules {
	if len(body) > MaxBytes {
		body = body[:MaxBytes]
	}
	r := &rules{body: string(body)}
	if data, err := robotstxt.FromBytes(body); err == nil {
		if g := data.FindGroup(token); g != nil {
			r.crawlDelay = min(g.CrawlDelay, MaxCrawlDelay)
		}
	}
	return r
}
