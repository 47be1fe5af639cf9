package crawlstate

import (
	"context"
	"fmt"
	"time"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// The hosts whose circuit a crawl opened, for its summary and status, noted in the crawl's notes
// of the host as the throttled hosts are (throttled.go, hostnotes.go): each opening and each
// closing is one write, far from the per-page path.

// The attributes of a host's notes (named as throttled.go says): how many times the crawl's
// workers opened the host's circuit, when they last did, and when they last closed it (Unix ms).
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
// circuit in the crawl's notes of the host (hostnotes.go).
func (s *Hosts) noteCircuit(ctx context.Context, crawl, host, what string, at time.Time) error {
	var add map[string]int64
	if what == attrCircuitOpened {
		add = map[string]int64{attrCircuitOpens: 1}
	}
	if err := s.writeNote(ctx, crawl, host, what, at.UnixMilli(), nil, add); err != nil {
		return fmt.Errorf("note the circuit of %s: %w", host, err)
	}
	return nil
}

// circuitsIn gathers the hosts whose circuit was opened, noted in a crawl's counter shards, the
// most recently opened first.
func circuitsIn(items map[table.Key]table.Item) []CircuitHost {
	byHost := map[string]*CircuitHost{}
	eachHostNote(items, attrCircuitOpens, func(it table.Item, host, enc string, n int64) {
		h := hostOf(byHost, host, func() *CircuitHost { return &CircuitHost{Host: host} })
		h.Opens += n
		if at := time.UnixMilli(it.Int(attrCircuitOpened + enc)); at.After(h.OpenedAt) {
			h.OpenedAt = at
		}
	})
	// A closing may be noted in a shard that holds no opening of the host.
	eachHostNote(items, attrCircuitClosed, func(_ table.Item, host, _ string, ms int64) {
		if h := byHost[host]; h != nil && time.UnixMilli(ms).After(h.ClosedAt) {
			h.ClosedAt = time.UnixMilli(ms)
		}
	})
	out := make([]CircuitHost, 0, len(byHost))
	for _, h := range byHost {
		out = append(out, *h)
	}
	latestFirst(out, func(h CircuitHost) (time.Time, string) { return h.OpenedAt, h.Host })
	return out
}
