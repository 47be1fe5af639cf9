package crawlstate

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/cost"
	"github.com/crawlstack/crawlstack/shared/port/table"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
)

// CountParseError counts a page whose parse failed (its URL stays fetched).
func (s *Runs) CountParseError(ctx context.Context, crawl string, class errclass.Class) error {
	return s.count(ctx, crawl, map[string]int64{"parse_errors": 1, "class_" + string(class): 1})
}

// CountRobotsRefused counts n links that parse dropped because their hosts' robots.txt refuses
// them (Counters.RobotsRefused): URLs never admitted, so not in Seen.
func (s *Runs) CountRobotsRefused(ctx context.Context, crawl string, n int64) error {
	return s.count(ctx, crawl, map[string]int64{counterRobotsRefused: n})
}

// counterRobotsRefused counts the links parse refused for robots.txt (Counters.RobotsRefused).
const counterRobotsRefused = "robots_refused"

// CountPoison counts a quarantined message of the crawl.
func (s *Runs) CountPoison(ctx context.Context, crawl string) error {
	return s.count(ctx, crawl, map[string]int64{"class_" + string(errclass.Poison): 1})
}

// Counters are a crawl's totals.
type Counters struct {
	Seen, Fetched, Skipped, Failed, ParseErrors int64
	// StoppedURLs are the URLs a stopped crawl ended unfetched (state Stopped), and StopRefused the
	// links it did not admit once stopped (no URL: like a budget refusal, counted and not recorded;
	// Classes' stopped counts the URLs only).
	StoppedURLs, StopRefused int64
	// RobotsRefused are the links that parse dropped because the robots.txt rules the fetcher
	// applied to their host refuse them (no URL: not in Seen, and not in Classes' robots, which
	// counts the URLs the fetcher skipped). Each parse message counts a URL once; a URL linked from
	// pages of several messages counts once in each.
	RobotsRefused int64
	Classes       map[errclass.Class]int64
	// Cost is the crawl's ledger: the billed units its handlers were metered for (AddCost).
	Cost cost.Units
	// Stopped is why the crawl stopped admitting URLs before its end (StopBudget), if it did.
	Stopped string
	// Started is when the crawl started (MarkStarted), from its item; zero when not on record
	// (Counters only).
	Started time.Time
	// GaveUp are some of the failed URLs, at most MaxGaveUp (Tally only).
	GaveUp []URL
	// Throttled are the hosts whose gap the crawl widened after their 429s, failures or slow answers
	// (see throttled.go).
	Throttled []ThrottledHost
	// Circuits are the hosts whose circuit the crawl opened after their failures (circuitnotes.go).
	Circuits []CircuitHost
	// Pages, PagesParsed, LinksNamed and LinksAdmitted count what the crawl's end waits for
	// besides its URLs (endcount.go): the fetched pages stored for parsing and those whose parse
	// message is marked done, the Links messages named sent and those marked admitted. Counters
	// only; a tally leaves them zero.
	Pages, PagesParsed, LinksNamed, LinksAdmitted int64
	// Responses are the HTTP statuses, body bytes and recrawl changes of the crawl's URLs
	// (responses.go). Counters only: a tally takes them from the counters.
	Responses Responses
}

// MaxGaveUp bounds the failed URLs that Tally lists.
const MaxGaveUp = 20

// Pending is how many seen URLs have no terminal state yet.
func (c Counters) Pending() int64 {
	return c.Seen - c.Fetched - c.Skipped - c.Failed - c.StoppedURLs
}

// counterAttrs are the counters' attribute names besides the classes'.
var counterAttrs = []string{"seen", string(Fetched), string(Skipped), string(Failed), Stopped.counter(), counterStopRefused, counterRobotsRefused, "parse_errors",
	counterPages, counterPagesParsed, counterLinksNamed, counterLinksAdmitted}

// Counters reads the crawl's totals (zero for an unknown crawl): the sums over its counter shards
// and the crawl item, which holds the counts written before the counters were sharded.
// Its Throttled and Circuits hold only the notes that crawls from before the notes had items of
// their own wrote in their shards: CountersWithHosts reads the hosts' notes too.
func (s *Runs) Counters(ctx context.Context, crawl string) (Counters, error) {
	return s.counters(ctx, crawl, false)
}

// CountersWithHosts is Counters with the hosts the crawl throttled or whose circuit it opened, for
// its status and summary: reading the hosts' notes takes noteParts Queries (hostnotes.go) more,
// which the drain checks, the budget and the progress lines do without.
func (s *Runs) CountersWithHosts(ctx context.Context, crawl string) (Counters, error) {
	return s.counters(ctx, crawl, true)
}

// counters is Counters, with the hosts' notes when notes is set.
func (s *Runs) counters(ctx context.Context, crawl string, notes bool) (Counters, error) {
	keys := make([]table.Key, 0, CounterShards+1)
	keys = append(keys, CrawlKey(crawl))
	for n := range CounterShards {
		keys = append(keys, ShardKey(crawl, n))
	}
	items, err := s.t.GetMany(ctx, keys)
	if err != nil {
		return Counters{}, fmt.Errorf("read the counters of crawl %s: %w", crawl, err)
	}
	sum := map[string]int64{}
	var resp Responses
	var started time.Time
	for _, it := range items {
		if it.Has(attrStarted) {
			started = time.UnixMilli(it.Int(attrStarted))
		}
		for _, a := range counterAttrs {
			sum[a] += it.Int(a)
		}
		for _, a := range cost.CounterNames {
			sum[a] += it.Int(a)
		}
		for _, cl := range errclass.All {
			sum["class_"+string(cl)] += it.Int("class_" + string(cl))
		}
		resp.add(it)
	}
	c := Counters{
		Seen: sum["seen"], Fetched: sum[string(Fetched)], Skipped: sum[string(Skipped)],
		Failed: sum[string(Failed)], StoppedURLs: sum[Stopped.counter()], StopRefused: sum[counterStopRefused],
		RobotsRefused: sum[counterRobotsRefused],
		ParseErrors:   sum["parse_errors"],
		Pages:         sum[counterPages], PagesParsed: sum[counterPagesParsed],
		LinksNamed: sum[counterLinksNamed], LinksAdmitted: sum[counterLinksAdmitted],
		Classes:   map[errclass.Class]int64{},
		Cost:      cost.UnitsFromCounters(func(name string) int64 { return sum[name] }),
		Responses: resp,
		Started:   started,
	}
	for _, cl := range errclass.All {
		if n := sum["class_"+string(cl)]; n != 0 {
			c.Classes[cl] = n
		}
	}
	for _, it := range items {
		if r := it.String(attrStopped); r != "" {
			c.Stopped = r
		}
	}
	noted := map[table.Key]table.Item{}
	if notes {
		if noted, err = hostNotes(ctx, s.t, crawl); err != nil {
			return Counters{}, err
		}
	}
	maps.Copy(noted, items) // the notes the shards hold, written before the notes had items
	c.Throttled, c.Circuits = throttledIn(noted), circuitsIn(noted)
	return c, nil
}
