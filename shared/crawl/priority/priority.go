// Package priority ranks a crawl's URLs by its spec's priority rules: by the URL's pattern, its
// depth, and the page that links it. The frontier admits the URLs of each Links message (a page's
// links, a chunk of seeds) in rank order, high first: a page budget too small for the message goes
// to its higher-ranked URLs, and their fetch messages are sent first. docs/spec.md says what is
// ordered and what is only preferred.
package priority

import (
	"fmt"
	"regexp"
	"slices"
)

// Level is a URL's priority: High, Normal or Low.
type Level int

// The levels, in order.
const (
	Low    Level = -1
	Normal Level = 0
	High   Level = 1
)

// ParseLevel reads "high", "normal" or "low".
func ParseLevel(s string) (Level, error) {
	switch s {
	case "high":
		return High, nil
	case "normal":
		return Normal, nil
	case "low":
		return Low, nil
	}
	return Normal, fmt.Errorf("priority %q: want high, normal or low", s)
}

// Rule gives its Priority to the URLs that meet all its conditions; a rule has at least one.
type Rule struct {
	// Pattern is a regexp the URL matches (anywhere, as include and exclude patterns do).
	Pattern string `json:"pattern,omitempty"`
	// From is a regexp the page that links the URL matches: the link's source. Seeds have none.
	From string `json:"from,omitempty"`
	// MaxDepth, when set, holds for URLs at that depth or less (seeds are at 0).
	MaxDepth *int `json:"maxDepth,omitempty"`
	// Priority is "high", "normal" or "low".
	Priority string `json:"priority"`
}

// MaxRules bounds a spec's priority rules.
const MaxRules = 50

type rule struct {
	pattern, from *regexp.Regexp
	maxDepth      *int
	level         Level
}

// Ranker ranks URLs by rules. The zero Ranker and a nil one rank every URL Normal.
type Ranker struct{ rules []rule }

// Compile checks rules and returns their Ranker; an error names the rule at fault (from 1).
func Compile(rules []Rule) (*Ranker, error) {
	if len(rules) > MaxRules {
		return nil, fmt.Errorf("%d priority rules, over the limit of %d", len(rules), MaxRules)
	}
	r := &Ranker{}
	for i, in := range rules {
		c, err := compile(in)
		if err != nil {
			return nil, fmt.Errorf("priority rule %d: %w", i+1, err)
		}
		r.rules = append(r.rules, c)
	}
	return r, nil
}

// Check says whether the rule can work: its priority, its patterns and at least one condition.
func (in Rule) Check() error {
	_, err := compile(in)
	return err
}

func compile(in Rule) (rule, error) {
	var c rule
	var err error
	if c.level, err = ParseLevel(in.Priority); err != nil {
		return c, err
	}
	if in.Pattern == "" && in.From == "" && in.MaxDepth == nil {
		return c, fmt.Errorf("no condition: give a pattern, a from pattern or a max_depth")
	}
	if in.Pattern != "" {
		if c.pattern, err = regexp.Compile(in.Pattern); err != nil {
			return c, fmt.Errorf("pattern %q: %w", in.Pattern, err)
		}
	}
	if in.From != "" {
		if c.from, err = regexp.Compile(in.From); err != nil {
			return c, fmt.Errorf("from %q: %w", in.From, err)
		}
	}
	if in.MaxDepth != nil && *in.MaxDepth < 0 {
		return c, fmt.Errorf("max_depth %d: want 0 or more", *in.MaxDepth)
	}
	c.maxDepth = in.MaxDepth
	return c, nil
}

// Rank is the level of the URL u, linked from the page from ("" for a seed) at depth: the first
// rule whose conditions all hold gives it, Normal when none does.
func (r *Ranker) Rank(u, from string, depth int) Level {
	if r == nil {
		return Normal
	}
	for _, c := range r.rules {
		if c.pattern != nil && !c.pattern.MatchString(u) {
			continue
		}
		if c.from != nil && (from == "" || !c.from.MatchString(from)) {
			continue
		}
		if c.maxDepth != nil && depth > *c.maxDepth {
			continue
		}
		return c.level
	}
	return Normal
}

// Order returns the indexes of urls (all linked from the page from, at depth) in rank order,
// high first; URLs of one rank keep their order. Without rules it is 0, 1, 2 ...
func (r *Ranker) Order(urls []string, from string, depth int) []int {
	idx := make([]int, len(urls))
	for i := range idx {
		idx[i] = i
	}
	if r == nil || len(r.rules) == 0 {
		return idx
	}
	ranks := make([]Level, len(urls))
	for i, u := range urls {
		ranks[i] = r.Rank(u, from, depth)
	}
	slices.SortStableFunc(idx, func(a, b int) int { return int(ranks[b]) - int(ranks[a]) })
	return idx
}
