// Package optout keeps the crawler's opt-out list in the state table: hosts, URL prefixes, URL
// patterns and single URLs that no crawl may fetch, because their owners asked (an opt-out) or
// because their pages were erased (a purge's tombstone, see docs/erasure.md). The schedule
// handler checks every URL against it at admission; a URL on it ends skipped with class
// opted_out, and is never fetched.
//
// The list is one table item, "x#optout", with an attribute per entry (its JSON), so an entry is added or
// removed with one conditional-free write, and a reader reads the whole list with one Get. A
// Matcher keeps the list in memory and reads it again at most every RefreshEvery, so admission
// costs a read per process and period, not per URL. DynamoDB bounds an item at 400 KB: some
// thousands of entries.
package optout

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"

	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// Key is the table key of the opt-out list.
var Key = crawlstate.OptOutKey

// Kind is what an entry matches.
type Kind string

// The kinds of entries.
const (
	// Host matches the host and every host under it (example.com: www.example.com too).
	Host Kind = "host"
	// Prefix matches the URLs that start with it, normalised.
	Prefix Kind = "prefix"
	// Pattern matches the URLs, normalised, that a Go (RE2) regexp finds a match in.
	Pattern Kind = "pattern"
	// URL matches one URL, normalised: a purged page's tombstone.
	URL Kind = "url"
)

// Kinds are the kinds of entries, in the order they are listed.
var Kinds = []Kind{Host, Prefix, Pattern, URL}

// Entry is one item of the list.
type Entry struct {
	Kind  Kind   `json:"kind"`
	Value string `json:"value"`
	// Reason is why it is on the list (an owner's request, a purge), for the audit.
	Reason string    `json:"reason,omitempty"`
	Added  time.Time `json:"added"`
}

// NewEntry checks and normalises an entry: a host as a URL's host is, a prefix and a URL as
// URLs are, a pattern compiled. Every bad value gets an error that says what is wrong.
func NewEntry(kind Kind, value, reason string, now time.Time) (Entry, error) {
	value = strings.TrimSpace(value)
	if value == "" {
		return Entry{}, fmt.Errorf("%s: empty", kind)
	}
	e := Entry{Kind: kind, Reason: reason, Added: now.UTC()}
	switch kind {
	case Host:
		u, err := urlnorm.Normalize("http://" + value + "/")
		if err != nil || u.Port() != "" || strings.ContainsAny(value, "/?#@") {
			return Entry{}, fmt.Errorf("host %q: want a host name such as example.com", value)
		}
		e.Value = u.Hostname()
	case Prefix, URL:
		u, err := urlnorm.Normalize(value)
		if err != nil {
			return Entry{}, fmt.Errorf("%s %q: want an http or https URL: %w", kind, value, err)
		}
		e.Value = u.String()
	case Pattern:
		if _, err := regexp.Compile(value); err != nil {
			return Entry{}, fmt.Errorf("pattern %q: not a Go regexp: %w", value, err)
		}
		e.Value = value
	default:
		return Entry{}, fmt.Errorf("kind %q: want host, prefix, pattern or url", kind)
	}
	return e, nil
}

// attr is the entry's attribute name on the list item: its kind and a digest of its value (a
// DynamoDB expression reads brackets and dots in a name as a path, and a pattern has them).
func (e Entry) attr() string {
	sum := sha256.Sum256([]byte(e.Value))
	return string(e.Kind) + " " + base64.RawURLEncoding.EncodeToString(sum[:18])
}

// Store reads and changes the list.
type Store struct {
	T table.Table
}

// Add puts e on the list (again, with its new reason, if it was there).
func (s Store) Add(ctx context.Context, e Entry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("opt out %s %s: %w", e.Kind, e.Value, err)
	}
	if _, err := s.T.Update(ctx, Key, table.Update{Set: map[string]any{e.attr(): string(b)}}, table.Cond{}); err != nil {
		return fmt.Errorf("opt out %s %s: %w", e.Kind, e.Value, err)
	}
	return nil
}

// Remove takes e off the list. It reports whether it was on it.
func (s Store) Remove(ctx context.Context, e Entry) (bool, error) {
	_, err := s.T.Update(ctx, Key, table.Update{Remove: []string{e.attr()}}, table.Exists(e.attr()))
	if _, missing := table.IsConditionFailed(err); missing {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("remove the opt-out of %s %s: %w", e.Kind, e.Value, err)
	}
	return true, nil
}

// List returns the entries, by kind and then value.
func (s Store) List(ctx context.Context) ([]Entry, error) {
	it, err := s.T.Get(ctx, Key)
	if errors.Is(err, table.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the opt-out list: %w", err)
	}
	var out []Entry
	for name := range it {
		kind, _, ok := strings.Cut(name, " ")
		if !ok || !known(Kind(kind)) {
			continue // the key, the TTL: not entries
		}
		var e Entry
		if err := json.Unmarshal([]byte(it.String(name)), &e); err != nil {
			return nil, fmt.Errorf("read the opt-out list: entry %q: %w", name, err)
		}
		out = append(out, e)
	}
	order := map[Kind]int{}
	for i, k := range Kinds {
		order[k] = i
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return order[out[i].Kind] < order[out[j].Kind]
		}
		return out[i].Value < out[j].Value
	})
	return out, nil
}

func known(k Kind) bool {
	for _, x := range Kinds {
		if x == k {
			return true
		}
	}
	return false
}

// Match returns the entry of list that u (normalised) matches, if one does.
func Match(list []Entry, u *url.URL) (Entry, bool) {
	m, err := compile(list)
	if err != nil {
		return Entry{}, false
	}
	return m.match(u)
}

// compiled is a list ready to match.
type compiled struct {
	hosts    map[string]Entry
	urls     map[string]Entry
	prefixes []Entry
	patterns []*regexp.Regexp
	byRE     []Entry
}

func compile(list []Entry) (*compiled, error) {
	c := &compiled{hosts: map[string]Entry{}, urls: map[string]Entry{}}
	for _, e := range list {
		switch e.Kind {
		case Host:
			c.hosts[e.Value] = e
		case URL:
			c.urls[e.Value] = e
		case Prefix:
			c.prefixes = append(c.prefixes, e)
		case Pattern:
			re, err := regexp.Compile(e.Value)
			if err != nil {
				return nil, fmt.Errorf("opt-out pattern %q: %w", e.Value, err)
			}
			c.patterns, c.byRE = append(c.patterns, re), append(c.byRE, e)
		}
	}
	return c, nil
}

func (c *compiled) match(u *url.URL) (Entry, bool) {
	for h := strings.ToLower(u.Hostname()); h != ""; {
		if e, ok := c.hosts[h]; ok {
			return e, true
		}
		_, rest, ok := strings.Cut(h, ".")
		if !ok {
			break
		}
		h = rest
	}
	s := u.String()
	if e, ok := c.urls[s]; ok {
		return e, true
	}
	for _, e := range c.prefixes {
		if strings.HasPrefix(s, e.Value) {
			return e, true
		}
	}
	for i, re := range c.patterns {
		if re.MatchString(s) {
			return c.byRE[i], true
		}
	}
	return Entry{}, false
}

// RefreshEvery is how long a Matcher uses the list it read before it reads it again: an entry
// added takes effect within that long in every running handler (at once in a new one).
const RefreshEvery = 30 * time.Second

// Matcher matches URLs against the list, read at most every RefreshEvery. It is safe for
// concurrent use.
type Matcher struct {
	Store Store
	Now   func() time.Time

	mu     sync.Mutex
	list   *compiled
	readAt time.Time
}

// OptedOut returns the entry that u (normalised) matches, if one does. A list that cannot be read
// is an error: a URL is not admitted unchecked.
func (m *Matcher) OptedOut(ctx context.Context, u *url.URL) (Entry, bool, error) {
	c, err := m.current(ctx)
	if err != nil {
		return Entry{}, false, err
	}
	e, ok := c.match(u)
	return e, ok, nil
}

func (m *Matcher) current(ctx context.Context) (*compiled, error) {
	now := time.Now
	if m.Now != nil {
		now = m.Now
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.list != nil && now().Sub(m.readAt) < RefreshEvery {
		return m.list, nil
	}
	list, err := m.Store.List(ctx)
	if err != nil {
		return nil, err
	}
	c, err := compile(list)
	if err != nil {
		return nil, err
	}
	m.list, m.readAt = c, now()
	return c, nil
}
