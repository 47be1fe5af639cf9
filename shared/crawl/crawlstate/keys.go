package crawlstate

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
)

// The table's key layout: every item's key starts with its kind's letter and a '#'.
//
//	u#<crawl>#<sha256(url)>   a URL, written once at its admission (URLKey)
//	r#<crawl>#<group>         a group's claims and outcomes, one item per fetch message (outcomes.go)
//	c#<crawl>                 a crawl (CrawlKey)
//	c#<crawl>#<n>             one of the crawl's counter shards (ShardKey, CounterShards)
//	m#<crawl>#<sha256(name)>  a parse message marked done, one per WARC file (parsed.go)
//	b#<crawl>#<host>          a host's page budget in a crawl (BudgetPrefix)
//	p#<host>                  a host's politeness slot, which every crawl and worker shares (SlotPrefix)
//	x#optout                  the opt-out list (package optout)
const (
	urlKind    = "u#"
	groupKind  = "r#"
	crawlKind  = "c#"
	parsedKind = "m#"
	budgetKind = "b#"
	slotKind   = "p#"
	singleKind = "x#"

	// SlotPrefix starts the keys of every host's politeness slot.
	SlotPrefix = slotKind
	// OptOutKey is the one item of the opt-out list (package optout).
	OptOutKey = singleKind + "optout"
)

// URLKey is the table key of a URL item; key is urlnorm.Key of the normalised URL.
func URLKey(crawl, key string) string { return urlKind + crawl + "#" + key }

// CrawlKey is the table key of a crawl item.
func CrawlKey(crawl string) string { return crawlKind + crawl }

// ShardKey is the table key of counter shard n (0 to CounterShards-1) of the crawl.
func ShardKey(crawl string, n int) string { return CrawlKey(crawl) + "#" + strconv.Itoa(n) }

// BudgetPrefix starts the keys of the crawl's per-host page budgets.
func BudgetPrefix(crawl string) string { return budgetKind + crawl + "#" }

func budgetKey(crawl, host string) string { return BudgetPrefix(crawl) + host }
func slotKey(host string) string          { return SlotPrefix + host }
func groupKey(crawl, group string) string { return groupKind + crawl + "#" + group }

// parsedPrefix starts the keys of the crawl's parse messages marked done.
func parsedPrefix(crawl string) string { return parsedKind + crawl + "#" }

// parsedKey is the item that marks the parse message of the WARC file name done.
func parsedKey(crawl, name string) string {
	sum := sha256.Sum256([]byte(name))
	return parsedPrefix(crawl) + hex.EncodeToString(sum[:16])
}

// KindOf names the kind of item a key is: "url", "groups", "crawl" (a crawl or one of its counter
// shards), "parsed", "host budget", "slot", or "other".
func KindOf(key string) string {
	for _, k := range []struct{ prefix, name string }{
		{urlKind, "url"}, {groupKind, "groups"}, {crawlKind, "crawl"}, {parsedKind, "parsed"},
		{budgetKind, "host budget"}, {slotKind, "slot"},
	} {
		if strings.HasPrefix(key, k.prefix) {
			return k.name
		}
	}
	return "other"
}
