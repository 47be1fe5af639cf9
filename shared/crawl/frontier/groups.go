package frontier

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"sync"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/message"
)

// A URL is admitted in a group (crawlstate.URLs.AdmitIn), and its fetch messages name it: the
// fetcher claims a message's URLs, and records their outcomes, in one write each on their group's
// item. So a group is what schedule will send as one fetch message: at most
// message.MaxPackedURLs URLs, one of each host (a message's URLs all go out when it arrives), due
// at the same second. The slots are booked after admission, with the batch's (Send), so the
// second is guessed from what the store knows of each host's next slots (SlotGuess); a URL whose
// slot turns out another second goes in a message of its own group's, which costs a message and a
// claim more, not a fetch. A polite host's URLs go in runs instead (runs.go): a group of up to
// Config.RunURLs of that host alone, in consecutive slots, fetched one after another.

// groups hands out the groups of one schedule batch's URLs, shared by its Links messages.
type groups struct {
	mu    sync.Mutex
	start time.Time // the first take's time: the guessed slots are grouped by their second from then
	open  map[dueKey][]*group
	taken map[string]int // crawl and host -> URLs of the host given a group in this batch
	// runs is the open run of each crawl and host of runs (runs.go).
	runs map[string]*group
}

type dueKey struct {
	crawl string
	due   int64 // the guessed slot's second from the batch's start; 0 for lone URLs of runs' hosts
	// lone marks the groups of polite hosts' lone URLs, sent without a slot to the slow lane
	// (runs.go): a group is a run's host's or not as a whole.
	lone bool
}

type group struct {
	name  string
	hosts map[string]bool
	// n counts a run's URLs (its hosts hold its one host), and keys are their table keys.
	n    int
	keys map[string]bool
}

type groupsKey struct{}

// WithGroups returns ctx with a fresh group allocator: the Links messages of one schedule batch
// staged with it share their groups, and so their fetch messages.
func WithGroups(ctx context.Context) context.Context {
	return context.WithValue(ctx, groupsKey{}, newGroups())
}

func newGroups() *groups {
	return &groups{open: map[dueKey][]*group{}, taken: map[string]int{}, runs: map[string]*group{}}
}

// groupsIn returns ctx's allocator (Stage sees that there is one).
func groupsIn(ctx context.Context) *groups {
	return ctx.Value(groupsKey{}).(*groups)
}

// take gives a URL of host a group: the first open one of its crawl and guessed second without a
// URL of the host, or, when the host gets runs of up to run URLs (runs.go), its open run, or when
// the URL is lone (the only one of its host in its Links message) and the host has no open run
// in the batch, the first open group of lone URLs without one of the host. guess
// tells the start of the host's kth next slot; k is returned, the URL's place among the host's
// URLs of the batch, which Send books the host's slots in.
//
// A run never takes one key twice: two deliveries of a Links message in one batch would admit the
// URL twice in one group, and each take the other's admission for its own.
func (g *groups) take(crawl, host, key string, now time.Time, run int, lone bool, guess func(k int) time.Time) (name string, k int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.start.IsZero() {
		g.start = now
	}
	hk := crawl + "\x00" + host
	k = g.taken[hk]
	g.taken[hk]++
	if run >= 2 && lone && g.runs[hk] == nil {
		return g.join(dueKey{crawl: crawl, lone: true}, host), k
	}
	if run >= 2 {
		// The host's URLs in consecutive slots, in order: a run is full at run URLs.
		gr := g.runs[hk]
		if gr == nil || gr.n >= run || gr.keys[key] {
			gr = &group{name: groupName(), hosts: map[string]bool{host: true}, keys: map[string]bool{}}
			g.runs[hk] = gr
		}
		gr.n++
		gr.keys[key] = true
		return gr.name, k
	}
	// Rounded, not truncated: the guesses are whole milliseconds and the start is not, so a guess a
	// whole number of seconds after another may come a hair short of it.
	return g.join(dueKey{crawl: crawl, due: int64(guess(k).Sub(g.start).Round(time.Second) / time.Second)}, host), k
}

// join puts a URL of host in the first open group of d without one of the host, or a new one, and
// names it.
func (g *groups) join(d dueKey, host string) string {
	for _, gr := range g.open[d] {
		if !gr.hosts[host] && len(gr.hosts) < message.MaxPackedURLs {
			gr.hosts[host] = true
			return gr.name
		}
	}
	gr := &group{name: groupName(), hosts: map[string]bool{host: true}}
	g.open[d] = append(g.open[d], gr)
	return gr.name
}

// give takes back the place a URL of host with key took in the named group: it was not admitted
// there.
func (g *groups) give(crawl, host, key, name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	hk := crawl + "\x00" + host
	if g.taken[hk] > 0 {
		g.taken[hk]--
	}
	if gr := g.runs[hk]; gr != nil && gr.name == name {
		gr.n--
		delete(gr.keys, key)
		return
	}
	for d, list := range g.open {
		if d.crawl != crawl {
			continue
		}
		for _, gr := range list {
			if gr.name == name {
				delete(gr.hosts, host)
				return
			}
		}
	}
}

// groupName names a new group: 72 random bits, unique in a crawl.
func groupName() string {
	var b [9]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24 and later)
	return base64.RawURLEncoding.EncodeToString(b[:])
}
