package crawlstate

import (
	"context"
	"fmt"
	"maps"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// What a crawl saw of a host (its gap widened, its circuit opened or closed) is noted in an item of
// the crawl's for the host: h#<host>, in one of the crawl's first noteParts partitions. Before,
// the notes were attributes of the crawl's counter shards, a few for every host noted, and a
// shard's every write is billed by the shard's size: in the realistic crawl of make cost one
// shard held the notes of some 40 hosts, 8 KB, and each counter write on it took 9 write units
// (docs/cost.md). A note item holds one host's notes, under a kilobyte, and its writes are rare
// (a raise at most once a second a host). Notes that a crawl wrote in its shards before are still
// read.

// noteParts is how many of a crawl's partitions its host notes are spread over (the host hashed):
// reading them all is that many Queries, and a partition's 1,000 writes a second take the raises
// of 1,000 hosts a second each.
const noteParts = 4

// hostNoteKey is the key of the crawl's notes of the host.
func hostNoteKey(crawl, host string) table.Key {
	return table.Key{Part: crawlPart(crawl, shardOf(host, noteParts)), Sort: hostNoteKind + host}
}

// writeNote notes in the crawl's item of the host the attributes set, and adds add, on condition
// that the item's attribute at is absent or older than atMs: a replay of an applied write (the
// SDK sends it again when its answer is lost) finds its own time there and adds nothing twice.
// A later note there already (another worker's) keeps its own, and this one is left out.
func (s *Hosts) writeNote(ctx context.Context, crawl, host, at string, atMs int64, set map[string]any, add map[string]int64) error {
	set = maps.Clone(set)
	if set == nil {
		set = map[string]any{}
	}
	set[at] = atMs
	set[table.TTLAttr] = s.now().Add(DefaultRetention).Unix()
	_, err := s.t.Update(ctx, hostNoteKey(crawl, host), table.Update{Set: set, Add: add},
		table.Or(table.NotExists(at), table.Lt(at, atMs)))
	if _, noted := table.IsConditionFailed(err); noted {
		return nil
	}
	return err
}

// hostNotes reads the crawl's host notes, keyed by the attribute names the counter shards used
// (throttled.go, circuitnotes.go), so that one reader takes both.
func hostNotes(ctx context.Context, t table.Table, crawl string) (map[table.Key]table.Item, error) {
	items := map[table.Key]table.Item{}
	err := eachInParts(ctx, t, noteParts, func(n int) string { return crawlPart(crawl, n) }, hostNoteKind,
		func(sort string, it table.Item) error {
			host := sort[len(hostNoteKind):]
			h := hostAttr(host)
			named := table.Item{}
			for name, v := range it {
				if name != table.TTLAttr {
					named[name+h] = v
				}
			}
			items[table.Key{Part: crawlPart(crawl, shardOf(host, noteParts)), Sort: sort}] = named
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("read the host notes of crawl %s: %w", crawl, err)
	}
	return items, nil
}
