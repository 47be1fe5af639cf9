// Package scope decides whether a normalised URL may be admitted to a crawl: whether it stays
// within its seed's host or registrable domain, matches the include and exclude patterns, is not
// too deep, and does not look like a spider trap.
//
// It is pure: no I/O, and the clock is a parameter, so every rule is testable.
package scope

import (
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"golang.org/x/net/publicsuffix"
)

// Mode says how far from its seed a crawl may go.
type Mode string

// The scope modes.
const (
	// Host keeps the crawl on the seed's host (and port); http and https both count.
	Host Mode = "host"
	// Domain keeps the crawl within the seed's registrable domain (eTLD+1, from the public
	// suffix list), so www.example.co.uk and shop.example.co.uk are one site.
	Domain Mode = "domain"
	// Any follows links to any host. Use with include patterns or a budget.
	Any Mode = "any"
)

// ParseMode parses a mode name, case-insensitively. The empty string gives Host, the default.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case "":
		return Host, nil
	case Host, Domain, Any:
		return m, nil
	}
	return "", fmt.Errorf("parse scope mode %q: want host, domain or any", s)
}

// Rules are the admission rules of one crawl.
type Rules struct {
	// Mode bounds the hosts, relative to the seed the URL was discovered from.
	Mode Mode
	// Include patterns: when any are set, a URL must match at least one.
	Include []*regexp.Regexp
	// Exclude patterns: a URL must match none.
	Exclude []*regexp.Regexp
	// MaxDepth is the most link hops from the seed (the seed has depth 0). Zero admits the seeds
	// only; a negative value means no limit.
	MaxDepth int
	// HostDepths bound the depth of the hosts they match instead of MaxDepth: the first that
	// matches a URL's host counts (DepthFor).
	HostDepths []HostDepth
	// Traps are the spider-trap heuristics.
	Traps TrapRules
}

// DefaultRules returns the rules used when a crawl sets none: host scope, depth 16, the default
// trap rules and no patterns.
func DefaultRules() Rules {
	return Rules{Mode: Host, MaxDepth: 16, Traps: DefaultTraps()}
}

// ParsePatterns compiles include or exclude patterns (Go RE2 syntax, matched against the
// normalised URL string, unanchored). Blank entries are skipped; an invalid one is an error that
// names it.
func ParsePatterns(exprs []string) ([]*regexp.Regexp, error) {
	var out []*regexp.Regexp
	for i, e := range exprs {
		if strings.TrimSpace(e) == "" {
			continue
		}
		re, err := regexp.Compile(e)
		if err != nil {
			return nil, fmt.Errorf("parse pattern %d %q: %w", i+1, e, err)
		}
		out = append(out, re)
	}
	return out, nil
}

// Check returns nil when u may be admitted: u was found depth hops from seed, and now is the
// current time (for the calendar trap). Both URLs should be normalised (see urlnorm). A refusal
// is an error of class Scope (mode, include, exclude, depth) or Trap (a trap rule) whose message
// names the rule. A seed is checked as its own root (seed == u, depth 0): only exclude, include
// and the trap rules can refuse it.
func (r Rules) Check(seed, u *url.URL, depth int, now time.Time) error {
	if u == nil || seed == nil {
		return errclass.Errorf(errclass.Scope, "nil url")
	}
	if md := r.DepthFor(u.Host); md >= 0 && depth > md {
		return errclass.Errorf(errclass.Scope, "depth %d over max depth %d", depth, md)
	}
	if err := r.checkMode(seed, u); err != nil {
		return err
	}
	s := u.String()
	if len(r.Include) > 0 && !matchAny(r.Include, s) {
		return errclass.Errorf(errclass.Scope, "%s matches no include pattern", s)
	}
	for _, re := range r.Exclude {
		if re.MatchString(s) {
			return errclass.Errorf(errclass.Scope, "%s matches exclude pattern %q", s, re)
		}
	}
	return r.Traps.Check(u, now)
}

func (r Rules) checkMode(seed, u *url.URL) error {
	switch r.Mode {
	case Any:
		return nil
	case Domain:
		if sd, ud := site(seed.Hostname()), site(u.Hostname()); sd != ud {
			return errclass.Errorf(errclass.Scope, "domain %q is not the seed's domain %q", ud, sd)
		}
		return nil
	case Host, "":
		if !strings.EqualFold(seed.Host, u.Host) {
			return errclass.Errorf(errclass.Scope, "host %q is not the seed's host %q", u.Host, seed.Host)
		}
		return nil
	}
	return errclass.Errorf(errclass.Scope, "unknown mode %q", r.Mode)
}

// site returns the registrable domain of host, or the host itself for IP addresses, public
// suffixes and names the list cannot place.
func site(host string) string {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if _, err := netip.ParseAddr(host); err == nil {
		return host
	}
	d, err := publicsuffix.EffectiveTLDPlusOne(host)
	if err != nil {
		return host
	}
	return d
}

func matchAny(res []*regexp.Regexp, s string) bool {
	for _, re := range res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}
