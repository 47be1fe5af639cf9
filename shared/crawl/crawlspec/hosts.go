package crawlspec

import (
	"fmt"
	"net/http"
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/crawlstack/crawlstack/shared/crawl/scope"
)

// MaxHostRules bounds the entries of a spec's hosts section.
const MaxHostRules = 100

// HostRule is one entry of a spec's hosts section: settings for the hosts its pattern matches,
// over the crawl's (nil or empty fields keep the crawl's). The first entry that matches a host, in
// file order, is the one it takes.
type HostRule struct {
	// Pattern is the entry's host pattern (scope.HostPattern).
	Pattern scope.HostPattern `json:"pattern"`
	// Rate is the host's requests per second; robots.txt's Crawl-delay stays a floor.
	Rate *float64 `json:"rate,omitempty"`
	// Concurrency bounds the host's fetches in flight in one fetch process.
	Concurrency *int `json:"concurrency,omitempty"`
	// Headers are sent to the host besides the crawl's, over those of the same name.
	Headers http.Header `json:"headers,omitempty"`
	// MaxDepth bounds the link hops from the seed of the host's URLs.
	MaxDepth *int `json:"maxDepth,omitempty"`
	// Cookies are sent to the host with every request, in file order: a consent cookie, a
	// region. They are its Cookie header, over the crawl's.
	Cookies []Cookie `json:"cookies,omitempty"`
	// StickyProxy keeps the host's requests on one of the stack's proxies while it is up, over
	// a per-request rotation: the host sees one client, its cookies from one address.
	StickyProxy bool `json:"stickyProxy,omitempty"`
	// Session keeps the cookies the host sets in a jar of the crawl's, sent back with its later
	// requests in every fetch invocation (package session): a consent cookie, a login's.
	Session bool `json:"session,omitempty"`
	// Login opens the host's session before its first page and again when a page says it
	// expired (login.go); it keeps a session whether Session is set or not.
	Login *Login `json:"login,omitempty"`
}

// Cookie is one cookie of a host rule.
type Cookie struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// MaxCookieBytes bounds the cookies of one host rule, names and values.
const MaxCookieBytes = 4 << 10

// header is what the rule sends to its hosts besides the crawl's headers: its headers, and its
// cookies as a Cookie header (net/http's own encoding). nil: nothing.
func (r *HostRule) header() http.Header {
	if len(r.Cookies) == 0 {
		return r.Headers
	}
	req := &http.Request{Header: r.Headers.Clone()}
	if req.Header == nil {
		req.Header = http.Header{}
	}
	for _, c := range r.Cookies {
		req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
	}
	return req.Header
}

// cookies reads a host rule's cookies: a mapping of cookie names to values.
func (d *decoder) cookies(n *yaml.Node, key string) []Cookie {
	var out []Cookie
	size := 0
	d.mappingAny(n, key, func(k, v *yaml.Node) {
		val, ok := d.str(v, join(key, k.Value))
		if !ok {
			return
		}
		c := http.Cookie{Name: k.Value, Value: val}
		if err := c.Valid(); err != nil {
			d.fail(k, join(key, k.Value), "not a cookie name and value (RFC 6265): %v", err)
			return
		}
		size += len(c.Name) + len(c.Value)
		out = append(out, Cookie{Name: c.Name, Value: c.Value})
	})
	if size > MaxCookieBytes {
		d.fail(n, key, "%d bytes of cookies, over the limit of %d", size, MaxCookieBytes)
	}
	return out
}

// hosts reads the spec's hosts section: a mapping of host patterns to their settings.
func (d *decoder) hosts(n *yaml.Node) []HostRule {
	var out []HostRule
	d.mappingAny(n, "hosts", func(k, v *yaml.Node) {
		key := join("hosts", k.Value)
		p, err := scope.ParseHostPattern(k.Value)
		if err != nil {
			d.fail(k, key, "%v", err)
			return
		}
		r := HostRule{Pattern: p}
		d.mapping(v, key, map[string]func(k, v *yaml.Node){
			"rate":         func(_, v *yaml.Node) { r.Rate = d.rateAt(v, join(key, "rate")) },
			"concurrency":  func(_, v *yaml.Node) { r.Concurrency, _ = d.integer(v, join(key, "concurrency"), 1) },
			"max_depth":    func(_, v *yaml.Node) { r.MaxDepth, _ = d.integer(v, join(key, "max_depth"), 0) },
			"cookies":      func(_, v *yaml.Node) { r.Cookies = d.cookies(v, join(key, "cookies")) },
			"sticky_proxy": func(_, v *yaml.Node) { r.StickyProxy, _ = d.boolean(v, join(key, "sticky_proxy")) },
			"session":      func(_, v *yaml.Node) { r.Session, _ = d.boolean(v, join(key, "session")) },
			"login":        func(_, v *yaml.Node) { r.Login = d.login(v, join(key, "login"), p) },
			"headers": func(_, v *yaml.Node) {
				h, secrets := d.headersAt(v, join(key, "headers"))
				if len(secrets) > 0 {
					d.fail(v, join(key, "headers"), "a host's headers are plain values: give secret headers in the crawl's headers section")
				}
				r.Headers = h
			},
		})
		out = append(out, r)
	})
	if len(out) > MaxHostRules {
		d.fail(n, "hosts", "%d entries, over the limit of %d", len(out), MaxHostRules)
	}
	return out
}

// boundHosts checks the hosts section against the stack's bounds, as the crawl's own settings
// are.
func (d *decoder) boundHosts(n *yaml.Node, s *Spec, b Bounds) {
	for _, r := range s.Hosts {
		key := join("hosts", string(r.Pattern))
		if r.Rate != nil && b.HostRPS > 0 && *r.Rate > b.HostRPS {
			d.fail(n, join(key, "rate"), "%v is over the stack's bound of %v (CRAWL_HOST_RPS, --host-rps)", *r.Rate, b.HostRPS)
		}
		if r.MaxDepth != nil && b.MaxDepth != nil && *r.MaxDepth > *b.MaxDepth {
			d.fail(n, join(key, "max_depth"), "%v is over the stack's bound of %v (CRAWL_MAX_DEPTH, --max-depth)", *r.MaxDepth, *b.MaxDepth)
		}
		if r.StickyProxy && !b.Proxies {
			d.fail(n, join(key, "sticky_proxy"), "this stack fetches through no proxies (CRAWL_PROXIES, proxiesSecret, --proxy): there is no proxy to keep")
		}
		if r.Concurrency != nil && b.HostConcurrency > 0 && *r.Concurrency > b.HostConcurrency {
			d.fail(n, join(key, "concurrency"), "%v is over the stack's bound of %v (CRAWL_HOST_CONCURRENCY, --host-concurrency)", *r.Concurrency, b.HostConcurrency)
		}
	}
}

// hostRule is the first of c's host rules that matches host, or nil.
func (c *Crawl) hostRule(host string) *HostRule {
	if c == nil || c.Spec == nil {
		return nil
	}
	for i := range c.Spec.Hosts {
		if c.Spec.Hosts[i].Pattern.Match(host) {
			return &c.Spec.Hosts[i]
		}
	}
	return nil
}

// RateFor is the requests per second to host: its host rule's, or the crawl's (0: no limit).
func (c *Crawl) RateFor(host string) float64 {
	if rps, ok := c.RuleRate(host); ok {
		return rps
	}
	return c.HostRPS
}

// RuleRate is the requests per second to host that its host rule sets, if it sets one.
func (c *Crawl) RuleRate(host string) (float64, bool) {
	if r := c.hostRule(host); r != nil && r.Rate != nil {
		return *r.Rate, true
	}
	return 0, false
}

// ConcurrencyFor is the bound on host's fetches in flight in one process that its host rule sets,
// or base.
func (c *Crawl) ConcurrencyFor(host string, base int) int {
	if r := c.hostRule(host); r != nil && r.Concurrency != nil {
		return *r.Concurrency
	}
	return base
}

// StickyProxy says whether host's rule keeps its requests on one proxy (HostRule.StickyProxy).
func (c *Crawl) StickyProxy(host string) bool {
	r := c.hostRule(host)
	return r != nil && r.StickyProxy
}

// StickyProxies says whether any host rule keeps its requests on one proxy.
func (c *Crawl) StickyProxies() bool {
	return c != nil && c.Spec != nil && slices.ContainsFunc(c.Spec.Hosts, func(r HostRule) bool { return r.StickyProxy })
}

// Session says whether host's rule keeps its cookies in the crawl's jar (HostRule.Session).
func (c *Crawl) Session(host string) bool {
	r := c.hostRule(host)
	return r != nil && (r.Session || r.Login != nil)
}

// Sessions says whether any host rule keeps a cookie jar.
func (c *Crawl) Sessions() bool {
	return c != nil && c.Spec != nil && slices.ContainsFunc(c.Spec.Hosts, func(r HostRule) bool { return r.Session || r.Login != nil })
}

// HeaderFor is the headers host's rule adds to the crawl's, its cookies' Cookie header among
// them (nil: none).
func (c *Crawl) HeaderFor(host string) http.Header {
	if c == nil || c.Spec == nil {
		return nil
	}
	for i, r := range c.Spec.Hosts {
		if r.Pattern.Match(host) {
			if i < len(c.hostHeaders) {
				return c.hostHeaders[i]
			}
			return r.header()
		}
	}
	return nil
}

// hostDepths are the depth bounds of the spec's host rules (scope.Rules.HostDepths).
func hostDepths(rules []HostRule, base int) []scope.HostDepth {
	var out []scope.HostDepth
	for _, r := range rules {
		md := base
		if r.MaxDepth != nil {
			md = *r.MaxDepth
		}
		out = append(out, scope.HostDepth{Pattern: r.Pattern, MaxDepth: md})
	}
	return out
}

// checkHosts checks stored host rules as the spec's hosts section was checked.
func checkHosts(rules []HostRule) error {
	for _, r := range rules {
		if _, err := scope.ParseHostPattern(string(r.Pattern)); err != nil {
			return fmt.Errorf("hosts: %w", err)
		}
		if (r.Rate != nil && !(*r.Rate > 0)) || (r.Concurrency != nil && *r.Concurrency < 1) {
			return fmt.Errorf("hosts: %s: a rate or concurrency of 0 or less", r.Pattern)
		}
		for _, ck := range r.Cookies {
			if err := (&http.Cookie{Name: ck.Name, Value: ck.Value}).Valid(); err != nil {
				return fmt.Errorf("hosts: %s: cookies: %w", r.Pattern, err)
			}
		}
	}
	return nil
}
