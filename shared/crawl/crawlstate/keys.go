package crawlstate

import (
	"crypto/sha256"
	"encoding/hex"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// The table's key layout (docs/state.md has its arithmetic). Everything of one crawl lives in the
// crawl's Shards partitions, c#<crawl>#<n>, n the item's id hashed, and is read by a Query of each
// (eachInCrawl): what a crawl reads grows with that crawl, never with what else the table holds.
// The kind of an item is its sort key's first letter and '#':
//
//	c#<crawl>#<n>  u#<sha256(url)>       a URL, written once at its admission (URLKey)
//	c#<crawl>#<n>  r#<group>             a group's claims and outcomes, one item per fetch message (outcomes.go)
//	c#<crawl>#<n>  n#<i>                 one of the crawl's counter shards (ShardKey, CounterShards)
//	c#<crawl>#<n>  m#<sha256(name)>      a parse message marked done, one per WARC file (parsed.go),
//	               m#L…, m#A…            and the Links messages named and admitted (links.go)
//	c#<crawl>#<n>  b#<host>              a host's page budget in the crawl (budgetKey)
//	c#<crawl>#<n>  s#<host>              a host's cookie jar in the crawl (JarKey, sessions.go)
//	c#<crawl>#<n>  h#<host>              what the crawl saw of a host: its throttling, its circuit
//	                                     (hostnotes.go; n < noteParts)
//	c#<crawl>#<n>  a#<gen>#<i>           chunk i of a resumable tally's saved state (tallystep.go): its
//	                                     kind sorts before every other, and a tally reads after it
//	k#<n>          <crawl>               a crawl, among CrawlShards partitions listing every crawl (CrawlKey)
//	p#<n>          <host>                a host's politeness slot, which every crawl and worker shares (slotKey)
//	x#optout       x                     the opt-out list (package optout)
const (
	urlKind     = "u#"
	groupKind   = "r#"
	counterKind = "n#"
	parsedKind  = "m#"
	budgetKind  = "b#"
	// hostNoteKind: what a crawl saw of a host (hostnotes.go).
	hostNoteKind = "h#"

	crawlPartKind = "c#"
	crawlListKind = "k#"
	slotPartKind  = "p#"
)

// Shards is how many partitions one crawl's items are spread over: at 10,000 pages a second and
// about 2.2 write units a page, some 340 write units a second each, a third of a partition's 1,000
// (docs/state.md). A read of all of a crawl's items is Shards queries.
const Shards = 64

// CrawlShards is how many partitions the crawl items are spread over, and SlotShards the hosts'
// politeness slots.
const (
	CrawlShards = 16
	SlotShards  = 64
)

// OptOutKey is the one item of the opt-out list (package optout).
var OptOutKey = table.Key{Part: "x#optout", Sort: "x"}

// shardOf is the partition of one crawl's shards, or of the slots, that the id's item lives in.
func shardOf(id string, of int) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % uint32(of))
}

// crawlPart is partition n of the crawl's items.
func crawlPart(crawl string, n int) string { return crawlPartKind + crawl + "#" + strconv.Itoa(n) }

// inCrawl is the key of the crawl's item of kind with the id: in the partition the id hashes to.
func inCrawl(crawl, kind, id string) table.Key {
	return table.Key{Part: crawlPart(crawl, shardOf(id, Shards)), Sort: kind + id}
}

// URLKey is the table key of a URL item; key is urlnorm.Key of the normalised URL.
func URLKey(crawl, key string) table.Key { return inCrawl(crawl, urlKind, key) }

// CrawlKey is the table key of a crawl item.
func CrawlKey(crawl string) table.Key {
	return table.Key{Part: crawlListPart(shardOf(crawl, CrawlShards)), Sort: crawl}
}

func crawlListPart(n int) string { return crawlListKind + strconv.Itoa(n) }

// ShardKey is the table key of counter shard n (0 to CounterShards-1) of the crawl.
func ShardKey(crawl string, n int) table.Key {
	return table.Key{Part: crawlPart(crawl, n%Shards), Sort: counterKind + strconv.Itoa(n)}
}

// BudgetKind starts the sort keys of the crawl's per-host page budgets (b#<host>).
const BudgetKind = budgetKind

// BudgetKey is the table key of the crawl's page budget of the host.
func BudgetKey(crawl, host string) table.Key { return budgetKey(crawl, host) }

func budgetKey(crawl, host string) table.Key { return inCrawl(crawl, budgetKind, host) }

// slotKey is the key of the host's politeness slot.
func slotKey(host string) table.Key {
	return table.Key{Part: slotPart(shardOf(host, SlotShards)), Sort: host}
}

func slotPart(n int) string { return slotPartKind + strconv.Itoa(n) }

// GroupKey is the table key of a group's item (GroupOf names a URL's group).
func GroupKey(crawl, group string) table.Key { return groupKey(crawl, group) }

func groupKey(crawl, group string) table.Key { return inCrawl(crawl, groupKind, group) }

// ParsedKey is the table key of the item that marks the parse message of the WARC file name done.
func ParsedKey(crawl, name string) table.Key { return parsedKey(crawl, name) }

// parsedKey is the item that marks the parse message of the WARC file name done.
func parsedKey(crawl, name string) table.Key {
	sum := sha256.Sum256([]byte(name))
	return inCrawl(crawl, parsedKind, hex.EncodeToString(sum[:16]))
}

// KindOf names the kind of item a key is: "url", "groups", "crawl" (a crawl or one of its counter
// shards), "parsed", "host budget", "cookie jar", "slot", or "other".
func KindOf(key table.Key) string {
	switch {
	case strings.HasPrefix(key.Part, slotPartKind):
		return "slot"
	case strings.HasPrefix(key.Part, crawlListKind):
		return "crawl"
	case !strings.HasPrefix(key.Part, crawlPartKind):
		return "other"
	}
	for _, k := range []struct{ prefix, name string }{
		{urlKind, "url"}, {groupKind, "groups"}, {counterKind, "crawl"}, {parsedKind, "parsed"},
		{budgetKind, "host budget"}, {sessionKind, "cookie jar"}, {hostNoteKind, "host notes"},
	} {
		if strings.HasPrefix(key.Sort, k.prefix) {
			return k.name
		}
	}
	return "other"
}
