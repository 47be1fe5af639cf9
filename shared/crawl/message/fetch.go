package message

import (
	"errors"
	"fmt"
	"reflect"
	"time"
)

// The fetch message: one URL or several, what the fetcher needs of each, and who re-queued it.

// Fetch asks fetch to get one admitted URL (Target), or several (URLs): the frontier sends the
// URLs of one group (Target.Group) whose slots come due within a second of each other in one
// message, and the fetcher works on each as if it came alone (Split).
type Fetch struct {
	Header
	Target
	// URLs, when set, are the message's URLs, and Target is empty.
	URLs []Target `json:"urls,omitempty"`
}

// MaxFetchURLs bounds the URLs of one Fetch message: a run of one host's URLs, fetched one after
// another in the host's slots (shared/crawl/frontier/runs.go), holds up to that many.
const MaxFetchURLs = 60

// MaxPackedURLs bounds the URLs of a Fetch message of several hosts, one URL of each, which all
// go out at once when it arrives. A fetch batch of 100 such messages then holds at most 1,000
// URLs, each waiting for its host's slot inside the invocation: more would leave the last ones to
// start after their slots had gone by.
const MaxPackedURLs = 10

// Target is one URL to fetch, with what the fetch needs to know of it.
type Target struct {
	URL   string `json:"url,omitempty"`
	Root  string `json:"root,omitempty"`
	Depth int    `json:"depth,omitempty"`
	// Sitemap: the URL is a sitemap (see Links.Sitemap).
	Sitemap bool `json:"sitemap,omitempty"`
	// Group is the group the URL was admitted in, where the fetcher claims it and records its
	// outcome (crawlstate.AdmitIn); "": the URL's own.
	Group string `json:"group,omitempty"`
	// Prev are the claim's owners of the messages that re-queued this URL as this one, the latest
	// first (at most MaxPrev): a claim one of them holds passes to this message's
	// (crawlstate.URLs.ClaimGroup) without being given back.
	Prev []string `json:"prev,omitempty"`
	// Waits counts the delayed re-queues (politeness waits, long Retry-After) so far.
	Waits int `json:"waits,omitempty"`
	// Retries counts the failed requests (and robots.txt checks) of earlier deliveries: the retry
	// policy bounds them.
	Retries int `json:"retries,omitempty"`
	// NotBefore, when set, is the earliest time to fetch: a wait longer than SQS's 15-minute
	// delay is chained through it.
	NotBefore time.Time `json:"notBefore,omitzero"`
	// Slot, when set, is the host's politeness slot this message holds: it was reserved for it
	// before it was re-queued to wait, and the fetch goes out then without asking again.
	Slot time.Time `json:"slot,omitzero"`
	// LastMod is the lastmod a sitemap gave the URL, if any (Links.LastMod).
	LastMod time.Time `json:"lastMod,omitzero"`
	// Gap is the interval, in milliseconds, between the host's slots when Slot was reserved. A
	// fetcher that must space the host's requests further (robots.txt Crawl-delay) does not use
	// the slot. 0: the slot was reserved at the fetcher's own interval.
	Gap int64 `json:"gap,omitempty"`
}

// Split returns the message's URLs as messages of one URL each: m itself when it has one.
func (m *Fetch) Split() []*Fetch {
	if len(m.URLs) == 0 {
		return []*Fetch{m}
	}
	out := make([]*Fetch, len(m.URLs))
	for i, t := range m.URLs {
		out[i] = &Fetch{Header: m.Header, Target: t}
	}
	return out
}

// MaxPrev bounds Target.Prev. An owner joins the list only when it may hold the claim without
// knowing it (a redelivery, whose earlier delivery may have claimed, or a URL of a message of
// several, whose others claim it with them), and the list starts again from an owner that holds
// it, so a longer list takes that many such re-queues in a row within one lease.
const MaxPrev = 8

// Requeued marks every URL of the message as re-queued by owner (Target.Prev): held says that
// owner holds the URL's claim, so the owners before it no longer may; otherwise owner may hold
// it, and joins them.
func (m *Fetch) Requeued(owner string, held bool) {
	if len(m.URLs) == 0 {
		m.Prev = withOwner(m.Prev, owner, held)
	}
	for i := range m.URLs {
		m.URLs[i].Prev = withOwner(m.URLs[i].Prev, owner, held)
	}
}

func withOwner(prev []string, owner string, held bool) []string {
	out := []string{owner}
	if held {
		return out
	}
	for _, p := range prev {
		if p != owner && len(out) < MaxPrev {
			out = append(out, p)
		}
	}
	return out
}

// URLList returns the message's URLs, whichever form it has.
func (m *Fetch) URLList() []string {
	parts := m.Split()
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = p.URL
	}
	return out
}

// Pack returns one message of crawl for targets: the single-URL form for one, the list otherwise.
func Pack(crawl string, targets []Target) *Fetch {
	m := &Fetch{Header: Header{Crawl: crawl}}
	if len(targets) == 1 {
		m.Target = targets[0]
	} else {
		m.URLs = targets
	}
	return m
}

func (m *Fetch) validate() error {
	if len(m.URLs) == 0 {
		return m.Target.validate()
	}
	switch {
	case !reflect.ValueOf(m.Target).IsZero():
		return errors.New("both one url and a list of urls")
	case len(m.URLs) > MaxFetchURLs:
		return fmt.Errorf("%d urls, over the limit of %d", len(m.URLs), MaxFetchURLs)
	}
	for i, t := range m.URLs {
		if err := t.validate(); err != nil {
			return fmt.Errorf("url %d: %w", i, err)
		}
	}
	return nil
}

func (t Target) validate() error {
	switch {
	case t.URL == "":
		return errors.New("no url")
	case t.Root == "":
		return errors.New("no root")
	case t.Depth < 0 || t.Waits < 0 || t.Retries < 0:
		return errors.New("negative depth, waits or retries")
	}
	return nil
}
