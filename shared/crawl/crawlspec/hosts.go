package crawlspec

import (
	"fmt"
	"net/http"

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
			"rate":        func(_, v *yaml.Node) { r.Rate = d.rateAt(v, join(key, "rate")) },
			"concurrency": func(_, v *yaml.Node) { r.Concurrency, _ = d.integer(v, join(key, "concurrency"), 1) },
			"max_depth":   func(_, v *yaml.Node) { r.MaxDepth, _ = d.integer(v, join(key, "max_depth"), 0) },
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
	if r := c.hostRule(host); r != nil && r.Rate != nil {
		return *r.Rate
	}
	return c.HostRPS
}

// ConcurrencyFor is the bound on host's fetches in flight in one process that its host rule sets,
// or base.
func (c *Crawl) ConcurrencyFor(host string, base int) int {
	if r := c.hostRule(host); r != nil && r.Concurrency != nil {
		return *r.Concurrency
	}
	return base
}

// HeaderFor is the headers host's rule adds to the crawl's (nil: none).
func (c *Crawl) HeaderFor(host string) http.Header {
	if r := c.hostRule(host); r != nil {
		return r.Headers
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
	}
	return nil
}
