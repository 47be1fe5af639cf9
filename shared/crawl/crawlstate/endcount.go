package crawlstate

import (
	"context"
	"sync"
)

// The end's counters: what a crawl's end waits for, counted beside the writes that make it, so
// that a drain check reads a few counter shards instead of tallying the crawl's items (package
// finish). Each count rides on a write that happens once, or that knows its own replay:
//
//   - URLs admitted and ended: the counters seen, fetched, skipped, failed and stopped (Pending);
//   - fetched pages stored for parsing (counterPages): Record, for each fetched outcome with a
//     stored page, less one for each page Refetch takes back;
//   - pages parsed (counterPagesParsed): the pages of a parse message, when its mark is written
//     (MarkMessageParsedPages), by the write that made it (a replay finds its token);
//   - Links messages named (counterLinksNamed): the names on a parse mark when it is written, and
//     on a note when it is written (putLinks);
//   - Links messages admitted (counterLinksAdmitted): the names on an admitted mark when it is
//     written.
//
// The counters go through the counter shards' writes (countwrite.go), so a replay counts once.
// They are not exact, and need not be: a store that goes with increments unwritten leaves them
// low; a name on the marks of several messages of one parse batch is counted once by the store
// that marks them (recentNames), but a mark written again by another delivery elsewhere, or a
// Links message admitted in two batches, counts twice; a page parsed under its one-page message
// and its file's message counts twice. The check takes the counters' word only that work is left;
// when they show none, the exact tally (Drained) decides, and a crawl whose counters drifted high
// ends through the tally its stall check runs (finish).

// Counter names of the end's counters in the counter shards.
const (
	counterPages         = "pages"
	counterPagesParsed   = "pages_parsed"
	counterLinksNamed    = "links_named"
	counterLinksAdmitted = "links_admitted"
)

// attrEndCounted marks a crawl item whose crawl counts its end's counters from its start
// (MarkStarted): a crawl started before they were counted has none, and its checks tally.
const attrEndCounted = "endCounted"

// Left is the work the crawl's end's counters show left: URLs admitted and not ended, pages stored
// and not parsed, Links messages named and not admitted. A count below zero (the counters drifted)
// is none.
func (c Counters) Left() Left {
	return Left{Queued: max(c.Pending(), 0), Unparsed: max(c.Pages-c.PagesParsed, 0),
		Links: max(c.LinksNamed-c.LinksAdmitted, 0)}
}

// maxRecentNames bounds the names a store remembers having counted (recentNames): some 64 bytes
// each, a few hundred KB.
const maxRecentNames = 4096

// recentNames are the Links messages' names a store counted lately, by counter and crawl: every
// parse mark of a batch names all the batch's Links messages, and the batch's store counts each
// once. When full it is emptied, at the cost of a name counted twice.
type recentNames struct {
	mu   sync.Mutex
	seen map[string]struct{}
}

// fresh returns the names of links that the store has not counted lately under counter, and
// remembers them.
func (r *recentNames) fresh(crawl, counter string, links []string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == nil || len(r.seen)+len(links) > maxRecentNames {
		r.seen = map[string]struct{}{}
	}
	var n int64
	for _, l := range links {
		k := counter + "\x00" + crawl + "\x00" + l
		if _, ok := r.seen[k]; !ok {
			r.seen[k] = struct{}{}
			n++
		}
	}
	return n
}

// countLinks counts the names of links under counter, but those the store counted lately.
func (s *URLs) countLinks(ctx context.Context, crawl, counter string, links []string) error {
	if n := s.recent.fresh(crawl, counter, links); n > 0 {
		return s.counts.count(ctx, crawl, map[string]int64{counter: n})
	}
	return nil
}
