package crawlstate

import (
	"context"
	"encoding/base64"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// The hosts a crawl throttled, for its summary and status: every raise of a host's gap (SlowDown)
// is also noted in the crawl's notes of the host (hostnotes.go), which Counters reads. A raise
// happens at most once a second per host (raiseEvery), so the note is far from the per-page path.
// The notes a crawl wrote in its counter shards before, a host raised by several stores in
// several shards, are read too: the reader takes the latest raise and adds up their count.

// The attributes of a host's notes: the gap of the host's latest raise (ms), when it was (Unix
// ms), how many raises there were, and why. In a counter shard's notes (before the notes had
// items of their own), each name is followed by the host (base64url, since a DynamoDB expression
// reads brackets in a name as an index, and an IPv6 host has them); hostNotes reads a host's item
// under the same names.
const (
	attrThrottleGap    = "thr_gap:"
	attrThrottleAt     = "thr_at:"
	attrThrottleRaises = "thr_n:"
	attrThrottleWhy    = "thr_why:"
)

// ThrottledHost is a host whose gap between requests a crawl widened after its 429s, its failures
// in a row or its slow answers.
type ThrottledHost struct {
	Host string
	// Gap is the gap the host's latest raise set, at RaisedAt.
	Gap      time.Duration
	RaisedAt time.Time
	// Raises is how many times the crawl's workers widened the host's gap.
	Raises int64
	// Why is the reason of the latest raise: Why429, Why5xx or WhySlow ("" reads as a 429, the
	// only reason of the notes written before there were others).
	Why string
}

// Left is the host's throttled gap left at now: Gap halved for every ThrottleHalfLife since
// RaisedAt, as the politeness slots take it (0 once it has decayed away).
func (h ThrottledHost) Left(now time.Time) time.Duration {
	return throttle{gap: h.Gap.Milliseconds(), at: h.RaisedAt.UnixMilli()}.left(now)
}

// noteThrottled notes a raise of the host's gap in the crawl's notes of the host (hostnotes.go).
func (s *Hosts) noteThrottled(ctx context.Context, crawl, host string, gap time.Duration, at time.Time, why string) error {
	err := s.writeNote(ctx, crawl, host, attrThrottleAt, at.UnixMilli(),
		map[string]any{attrThrottleGap: gap.Milliseconds(), attrThrottleWhy: why}, map[string]int64{attrThrottleRaises: 1})
	if err != nil {
		return fmt.Errorf("note the throttling of %s: %w", host, err)
	}
	return nil
}

// hostAttr is the host as it is spelled in attribute names.
func hostAttr(host string) string { return base64.RawURLEncoding.EncodeToString([]byte(host)) }

// throttledIn gathers the throttled hosts noted in a crawl's counter shards, the most recently
// raised first.
func throttledIn(items map[table.Key]table.Item) []ThrottledHost {
	byHost := map[string]*ThrottledHost{}
	eachHostNote(items, attrThrottleRaises, func(it table.Item, host, enc string, n int64) {
		h := hostOf(byHost, host, func() *ThrottledHost { return &ThrottledHost{Host: host} })
		h.Raises += n
		if at := time.UnixMilli(it.Int(attrThrottleAt + enc)); at.After(h.RaisedAt) {
			h.RaisedAt, h.Gap = at, time.Duration(it.Int(attrThrottleGap+enc))*time.Millisecond
			h.Why = it.String(attrThrottleWhy + enc)
		}
	})
	out := make([]ThrottledHost, 0, len(byHost))
	for _, h := range byHost {
		if h.Why == "" {
			h.Why = Why429
		}
		out = append(out, *h)
	}
	latestFirst(out, func(h ThrottledHost) (time.Time, string) { return h.RaisedAt, h.Host })
	return out
}

// eachHostNote calls fn for every attribute of the items named prefix and a host (hostAttr), with
// the item, the host, the host as it is spelled in names, and the attribute's number. Names that
// do not decode are not this version's notes, and are left out.
func eachHostNote(items map[table.Key]table.Item, prefix string, fn func(it table.Item, host, enc string, n int64)) {
	for _, it := range items {
		for name := range it {
			enc, ok := strings.CutPrefix(name, prefix)
			if !ok {
				continue
			}
			b, err := base64.RawURLEncoding.DecodeString(enc)
			if err != nil {
				continue
			}
			fn(it, string(b), enc, it.Int(name))
		}
	}
}

// hostOf returns byHost's entry of host, made by mk when it has none.
func hostOf[T any](byHost map[string]*T, host string, mk func() *T) *T {
	h := byHost[host]
	if h == nil {
		h = mk()
		byHost[host] = h
	}
	return h
}

// latestFirst sorts notes of hosts by their time, the latest first, then by host.
func latestFirst[T any](out []T, key func(T) (time.Time, string)) {
	sort.Slice(out, func(i, j int) bool {
		ti, hi := key(out[i])
		tj, hj := key(out[j])
		if !ti.Equal(tj) {
			return ti.After(tj)
		}
		return hi < hj
	})
}
