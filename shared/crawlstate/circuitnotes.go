package crawlstate

import (
	"context"
	"encoding/base64"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/crawlstack/crawlstack/shared/table"
)

// The hosts whose circuit a crawl opened, for its summary and status, noted in the crawl's
// counter shards as the throttled hosts are (throttled.go): each opening and each closing is one
// write, far from the per-page path.

// Attribute name prefixes on a counter shard, each followed by the host (base64url): how many
// times the shard's store opened the host's circuit, when it last did, and when it last closed it
// (Unix ms).
const (
	attrCircuitOpens  = "cir_n:"
	attrCircuitOpened = "cir_at:"
	attrCircuitClosed = "cir_ok:"
)

// CircuitHost is a host whose circuit a crawl opened after its failures in a row.
type CircuitHost struct {
	Host string
	// Opens is how many times the crawl's workers opened the host's circuit.
	Opens int64
	// OpenedAt is its latest opening; ClosedAt its latest closing (zero: never), by a probe's answer.
	OpenedAt, ClosedAt time.Time
}

// Open tells whether the circuit is still open: its latest opening came after its latest closing.
func (h CircuitHost) Open() bool { return h.OpenedAt.After(h.ClosedAt) }

// noteCircuit notes an opening (attrCircuitOpened) or closing (attrCircuitClosed) of the host's
// circuit in one of the crawl's counter shards.
func (s *Store) noteCircuit(ctx context.Context, crawl, host, what string, at time.Time) error {
	key, h := s.shardKey(crawl), hostAttr(host)
	u := table.Update{Set: map[string]any{what + h: at.UnixMilli()}}
	if what == attrCircuitOpened {
		u.Add = map[string]int64{attrCircuitOpens + h: 1}
	}
	if _, err := s.t.Update(ctx, key, u, table.Cond{}); err != nil {
		return fmt.Errorf("note the circuit of %s in %s: %w", host, key, err)
	}
	return nil
}

// circuitsIn gathers the hosts whose circuit was opened, noted in a crawl's counter shards, the
// most recently opened first.
func circuitsIn(items map[string]table.Item) []CircuitHost {
	byHost := map[string]*CircuitHost{}
	for _, it := range items {
		for name := range it {
			enc, ok := strings.CutPrefix(name, attrCircuitOpens)
			if !ok {
				continue
			}
			b, err := base64.RawURLEncoding.DecodeString(enc)
			if err != nil {
				continue
			}
			h := byHost[string(b)]
			if h == nil {
				h = &CircuitHost{Host: string(b)}
				byHost[h.Host] = h
			}
			h.Opens += it.Int(name)
			if at := time.UnixMilli(it.Int(attrCircuitOpened + enc)); at.After(h.OpenedAt) {
				h.OpenedAt = at
			}
		}
	}
	// A closing may be noted in a shard that holds no opening of the host.
	for _, it := range items {
		for name := range it {
			enc, ok := strings.CutPrefix(name, attrCircuitClosed)
			if !ok {
				continue
			}
			b, _ := base64.RawURLEncoding.DecodeString(enc)
			if h := byHost[string(b)]; h != nil {
				if at := time.UnixMilli(it.Int(name)); at.After(h.ClosedAt) {
					h.ClosedAt = at
				}
			}
		}
	}
	out := make([]CircuitHost, 0, len(byHost))
	for _, h := range byHost {
		out = append(out, *h)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].OpenedAt.Equal(out[j].OpenedAt) {
			return out[i].OpenedAt.After(out[j].OpenedAt)
		}
		return out[i].Host < out[j].Host
	})
	return out
}
