package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/crawlstack/crawlstack/shared/crawl/frontier"
	"github.com/crawlstack/crawlstack/shared/crawl/layout"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/seeds"
	"github.com/crawlstack/crawlstack/shared/port/blob"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// URLs refused under flags that a later run of the crawl changed are reconsidered: each run keeps
// the flags that refuse URLs beside the crawl (refusalFlags), and the next run compares them with
// its own. For each flag that changed, the URLs that ended skipped with its class are forgotten
// and sent to schedule again, which admits them, or refuses them again, under the new flags.

// refusalFlags are the flags of a run that decide whether a URL is refused, and with which class.
type refusalFlags struct {
	AllowNet        []string `json:"allowNet,omitempty"`
	AllowPorts      []int    `json:"allowPorts,omitempty"`
	Scope           string   `json:"scope"`
	MaxDepth        int      `json:"maxDepth"`
	Include         []string `json:"include,omitempty"`
	Exclude         []string `json:"exclude,omitempty"`
	MaxPages        int      `json:"maxPages"`
	MaxPagesPerHost int      `json:"maxPagesPerHost"`
	MaxBodyBytes    int64    `json:"maxBodyBytes"`
}

func refusalFlagsOf(o RunOptions) refusalFlags {
	return refusalFlags{AllowNet: o.AllowNet, AllowPorts: o.AllowPorts, Scope: o.Scope, MaxDepth: o.MaxDepth, Include: o.Include, Exclude: o.Exclude,
		MaxPages: o.MaxPages, MaxPagesPerHost: o.MaxPagesPerHost, MaxBodyBytes: o.MaxBodyBytes}
}

// changed lists the flags that differ between was and now, and the classes of the URLs they
// refuse; unseen lists those that changed whose refusals were never recorded (relink.go).
func (now refusalFlags) changed(was refusalFlags) (flags []string, classes map[errclass.Class]bool, unseen []string) {
	classes = map[errclass.Class]bool{}
	add := func(differ bool, class errclass.Class, names ...string) {
		if differ {
			flags = append(flags, names...)
			classes[class] = true
		}
	}
	add(!slices.Equal(now.AllowNet, was.AllowNet), errclass.SSRF, "--allow-net")
	add(!slices.Equal(now.AllowPorts, was.AllowPorts), errclass.SSRF, "--allow-port")
	if now.Scope != was.Scope {
		unseen = append(unseen, "--scope")
	}
	if now.MaxDepth != was.MaxDepth {
		unseen = append(unseen, "--max-depth")
	}
	add(!slices.Equal(now.Include, was.Include), errclass.Scope, "--include")
	add(!slices.Equal(now.Exclude, was.Exclude), errclass.Scope, "--exclude")
	add(now.MaxPages != was.MaxPages, errclass.Budget, "--max-pages")
	add(now.MaxPagesPerHost != was.MaxPagesPerHost, errclass.Trap, "--max-pages-per-host")
	add(now.MaxBodyBytes != was.MaxBodyBytes, errclass.TooLarge, "--max-body-bytes")
	return flags, classes, unseen
}

// refusalFlagsKey is where a crawl's refusal flags are kept, beside its spec and report.
func refusalFlagsKey(crawl string) string { return layout.RefusalFlags(crawl) }

// keepRefusalFlags stores the run's refusal flags for its crawl.
func keepRefusalFlags(ctx context.Context, be *Backend, crawl string, f refusalFlags) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	if err := be.Blobs.Put(ctx, refusalFlagsKey(crawl), b, "application/json"); err != nil {
		return fmt.Errorf("keep the run's flags: %w", err)
	}
	return nil
}

// reconsidered is what reconsider did.
type reconsidered struct {
	unseen   []string                 // the flags that changed whose refusals were not recorded
	relinked int                      // the pages whose links were sent again for them
	flags    []string                 // the flags that changed
	classes  map[errclass.Class]int64 // the URLs sent again, by class
	n        int64
}

// any is whether reconsider sent anything to schedule.
func (r reconsidered) any() bool { return r.n > 0 || r.relinked > 0 }

// note is the line that tells the user.
func (r reconsidered) note() string {
	var parts []string
	if r.n > 0 {
		cl := map[string]int64{}
		for c, n := range r.classes {
			cl[string(c)] = n
		}
		parts = append(parts, fmt.Sprintf("%s changed since the crawl's last run: reconsidering the %d URLs it refused (%s)",
			strings.Join(r.flags, ", "), r.n, classLine(cl)))
	}
	if r.relinked > 0 {
		parts = append(parts, fmt.Sprintf("%s changed since the crawl's last run: sending the links of %d pages again",
			strings.Join(r.unseen, " and "), r.relinked))
	}
	return strings.Join(parts, "; ")
}

// reconsider compares the flags of the crawl's last run with this run's and sends the URLs that
// the changed ones refused to schedule again (res.Schedule), under the run's flags. A crawl with no
// flags on record (new, or last run by an older crawl) has nothing to reconsider. It scans the
// crawl's URLs: crawl run does it on the embedded backend only, where a scan is a local query.
func reconsider(ctx context.Context, be *Backend, res Resources, st *crawlstate.Store, crawl string, now refusalFlags,
	seeds func() seedRoots, userAgent string) (reconsidered, error) {
	var r reconsidered
	raw, err := be.Blobs.Get(ctx, refusalFlagsKey(crawl))
	if errors.Is(err, blob.ErrNotFound) {
		return r, nil
	}
	if err != nil {
		return r, fmt.Errorf("read the flags of the crawl's last run: %w", err)
	}
	var was refusalFlags
	if err := json.Unmarshal(raw, &was); err != nil {
		return r, fmt.Errorf("read the flags of the crawl's last run: %w", err)
	}
	flags, classes, unseen := now.changed(was)
	if len(unseen) > 0 {
		pages, err := relinkPages(ctx, st, crawl, was, now)
		if err != nil {
			return r, err
		}
		r.unseen = unseen
		if r.relinked, err = relink(ctx, be, res, st, crawl, pages, now.MaxDepth, userAgent); err != nil {
			return r, err
		}
	}
	if len(classes) == 0 {
		return r, nil
	}
	var refused []crawlstate.URL
	err = st.EachURL(ctx, crawl, func(u crawlstate.URL) error {
		if u.State == crawlstate.Skipped && classes[u.Class] {
			refused = append(refused, u)
		}
		return nil
	})
	if err != nil {
		return r, fmt.Errorf("find the URLs refused before: %w", err)
	}
	r.flags = flags
	r.classes, err = sendAgain(ctx, be, res, st, crawl, refused, seeds, nil)
	for _, n := range r.classes {
		r.n += n
	}
	return r, err
}

// sendAgain forgets the refused URLs of the crawl (crawlstate.Reopen, and forget: a frontier's
// memory of them, when one already worked on the crawl) and sends them to schedule (res.Schedule)
// again, at their depth, from their scope root. It returns how many it sent, by class; a URL
// another worker moved on meanwhile is left alone. seeds (nil: none) is called only for a URL
// refused at its admission, whose item names no scope root.
func sendAgain(ctx context.Context, be *Backend, res Resources, st *crawlstate.Store, crawl string, refused []crawlstate.URL,
	seeds func() seedRoots, forget func(crawl, url string)) (map[errclass.Class]int64, error) {
	sent := map[errclass.Class]int64{}
	type batch struct {
		root  string
		depth int
	}
	again := map[batch][]string{}
	for _, u := range refused {
		ok, err := st.Reopen(ctx, crawl, u)
		if err != nil {
			return sent, err
		}
		if !ok {
			continue
		}
		sent[u.Class]++
		if forget != nil {
			forget(crawl, u.URL)
		}
		root := u.Root
		if u.Depth > 0 && root == "" && seeds != nil {
			root = seeds().rootFor(u.URL) // refused at its admission: its item names no root
		}
		b := batch{root: root, depth: u.Depth}
		again[b] = append(again[b], u.URL)
	}
	if err := st.WriteCounters(ctx); err != nil {
		return sent, err
	}
	var entries []queue.Entry
	var names []string
	keys := make([]batch, 0, len(again))
	for b := range again {
		keys = append(keys, b)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].root+fmt.Sprint(keys[i].depth) < keys[j].root+fmt.Sprint(keys[j].depth)
	})
	for _, b := range keys {
		tmpl := message.Links{Header: message.Header{V: message.Version, Kind: message.KindLinks, Crawl: crawl}, Root: b.root, Depth: b.depth}
		for _, m := range message.SplitLinks(tmpl, again[b]) {
			body, err := message.Encode(&m)
			if err != nil {
				return sent, err
			}
			entries = append(entries, queue.Entry{ID: fmt.Sprint(len(entries)), Body: body})
			names = append(names, frontier.Source(&m))
		}
	}
	// Named before the send, for the crawl's end to wait for them.
	if err := st.NoteLinksSent(ctx, crawl, "reconsider", names); err != nil {
		return sent, err
	}
	if err := be.Queue.SendBatch(ctx, res.Schedule, entries); err != nil {
		return sent, fmt.Errorf("send the URLs refused before to schedule again: %w", err)
	}
	return sent, nil
}

// seedRoots are the scope roots a URL refused at its admission is checked against again: the
// first seed of each host, and the first seed of all. Built once, so that a list of many seeds
// is not read again for each URL.
type seedRoots struct {
	byHost map[string]string
	first  string
}

// rootsOf indexes the seed URLs by host.
func rootsOf(seedURLs []string) seedRoots {
	r := seedRoots{byHost: make(map[string]string)}
	for _, s := range seedURLs {
		if r.first == "" {
			r.first = s
		}
		if u, err := url.Parse(s); err == nil {
			if _, ok := r.byHost[u.Host]; !ok {
				r.byHost[u.Host] = s
			}
		}
	}
	return r
}

// rootFor is the seed of rawURL's host, or else the first seed ("" without seeds).
func (r seedRoots) rootFor(rawURL string) string {
	if u, err := url.Parse(rawURL); err == nil {
		if s, ok := r.byHost[u.Host]; ok {
			return s
		}
	}
	return r.first
}

// seedURLsOf are the seed URLs of a seed file's body (a URL list or a crawl spec).
func seedURLsOf(o RunOptions, body []byte) []string {
	if crawlspec.IsSpec(o.SeedFile, body) {
		spec, err := crawlspec.Parse(body, o.config(Resources{}).SpecBounds())
		if err != nil {
			return nil
		}
		return spec.Seeds
	}
	good, _, _ := seeds.Parse(bytes.NewReader(body))
	out := make([]string, len(good))
	for i, s := range good {
		out[i] = s.URL.String()
	}
	return out
}

// reconsiderRefused reconsiders the URLs of the picked crawl that flags changed since its last
// run refused (an ended crawl then goes on), tells why in p's note, and keeps this run's flags.
// The seed file is parsed again only if a refused URL needs its seeds: a new crawl has nothing to
// reconsider, and a list of a million seeds takes seconds to parse.
func reconsiderRefused(ctx context.Context, be *Backend, res Resources, st *crawlstate.Store, o RunOptions, body []byte, p *pick) error {
	now := refusalFlagsOf(o)
	seeds := sync.OnceValue(func() seedRoots { return rootsOf(seedURLsOf(o, body)) })
	r, err := reconsider(ctx, be, res, st, p.id, now, seeds, o.UserAgent)
	if err != nil {
		return err
	}
	switch {
	case r.any() && p.ended:
		p.ended = false
		p.note = fmt.Sprintf("crawl %s had ended (%d fetched); %s", p.id, p.fetched, r.note())
	case r.any():
		p.note += "; " + r.note()
	}
	return keepRefusalFlags(ctx, be, p.id, now)
}
