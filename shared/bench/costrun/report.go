package costrun

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/cost"
	"github.com/crawlstack/crawlstack/shared/observe/metrics"
)

// Print writes r as a table of units per page and dollars per million pages, by item, at prices
// p, then the hottest table items per 1,000 pages.
func (r Report) Print(w io.Writer, p cost.Prices) {
	r.printCrawl(w)
	r.printUnits(w, p)
	r.printBreakdowns(w)
	r.printLedger(w, p)
	r.printHot(w)
}

// per is x per page of the crawl.
func (r Report) per(x float64) float64 { return x / float64(max(r.Pages, 1)) }

// printCrawl writes what was crawled: the pages, their URLs, and the messages that carried them.
func (r Report) printCrawl(w io.Writer) {
	hosts := "hosts"
	if r.Hosts == 1 {
		hosts = "host"
	}
	fmt.Fprintf(w, "%s crawl: %d pages on %d %s in %v; %d fetched twice; %d fetch messages re-sent (%.2f per page); %d sent with a delay\n",
		r.Name, r.Pages, r.Hosts, hosts, r.Elapsed.Round(100*time.Millisecond), r.Twice, r.Requeued, r.per(float64(r.Requeued)), r.Delayed)
	if len(r.TwiceURLs) > 0 {
		fmt.Fprintf(w, "served more than once (host's index/path: answers): %s\n", strings.Join(r.TwiceURLs, ", "))
	}
	if l := r.Largest; l.Requests > 1 {
		span := l.Last.Sub(l.First)
		fmt.Fprintf(w, "the largest host: %d pages requested in %v from its first to its last, %.2f a second\n",
			l.Requests, span.Round(time.Second), float64(l.Requests-1)/span.Seconds())
	}
	if r.FirstMessages > 0 {
		fmt.Fprintf(w, "first fetch messages: %d, %.1f URLs each, in %d groups (%.2f messages a group)\n", r.FirstMessages,
			float64(r.FirstURLs)/float64(r.FirstMessages), r.Groups, float64(r.FirstMessages)/float64(max(r.Groups, 1)))
		if r.LoneMessages > 0 {
			fmt.Fprintf(w, "  of which %d to the slow lane with lone URLs of several polite hosts\n", r.LoneMessages)
		}
	}
	if r.History.Items > 0 {
		fmt.Fprintf(w, "the table held %d items of %d other crawls (%.1f MB) before the crawl: compare the DynamoDB units per page with a run without -history-items\n",
			r.History.Items, r.History.Crawls, float64(r.History.Bytes)/1e6)
	}
	fmt.Fprintf(w, "URLs: %d seen, %d fetched, %d skipped, %d failed; by class %v; links refused by robots.txt before admission %d\n",
		r.URLs.Seen, r.URLs.Fetched, r.URLs.Skipped, r.URLs.Failed, r.URLs.Classes, r.URLs.RobotsRefused)
	if r.IndexFiles > 0 {
		fmt.Fprintf(w, "the crawl's CDXJ index (crawl index): %d lines from %d WARC files, its GETs and PUT in the S3 figures\n",
			r.IndexLines, r.IndexFiles)
	}
}

// printUnits writes the table of units per page and dollars per million pages.
func (r Report) printUnits(w io.Writer, p cost.Prices) {
	u, c := r.Units, p.Cost(r.Units)
	perM := func(usd float64) float64 { return r.per(usd) * 1e6 }
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "item\tunits per page\t$ per million pages\t")
	fmt.Fprintf(tw, "SQS\t%.2f requests\t%.2f\t\n", r.per(float64(u.SQSRequests)), perM(c.SQS))
	fmt.Fprintf(tw, "DynamoDB\t%.2f WRU, %.2f RRU\t%.2f\t\n", r.per(u.DynamoDBWriteUnits), r.per(u.DynamoDBReadUnits), perM(c.DynamoDB))
	fmt.Fprintf(tw, "S3\t%.3f PUT/LIST, %.3f GET\t%.2f\t\n", r.per(float64(u.S3ClassA)), r.per(float64(u.S3ClassB)), perM(c.S3))
	fmt.Fprintf(tw, "Lambda\t%.3f requests, %.4f GB-s\t%.2f\t\n", r.per(float64(u.LambdaRequests)), r.per(u.LambdaGBSeconds), perM(c.Lambda))
	fmt.Fprintf(tw, "Logs\t%.0f bytes\t%.2f\t\n", r.per(float64(u.LogBytes)), perM(c.Logs))
	fmt.Fprintf(tw, "CloudWatch metrics\t%.6f series-hours\t%.2f\t\n", r.per(u.MetricSeriesHours), perM(c.Metrics))
	fmt.Fprintf(tw, "total\t\t%.2f\t\n", perM(c.Total))
	tw.Flush()
}

// writeKinds are the kinds of table item the writes are broken down by, in the order printed.
var writeKinds = []string{"url", "groups", "parsed", "slot", "host budget", "crawl", "other"}

// perPageOf is "name x.xx" per page for each of names with a count above zero, joined.
func (r Report) perPageOf(names []string, count func(string) float64) string {
	var parts []string
	for _, n := range names {
		if v := count(n); v > 0 {
			parts = append(parts, fmt.Sprintf("%s %.2f", n, r.per(v)))
		}
	}
	return strings.Join(parts, ", ")
}

// printBreakdowns writes the table writes, the slot writes, the invocations and the SQS requests
// per page, each by what they were spent on.
func (r Report) printBreakdowns(w io.Writer) {
	fmt.Fprintf(w, "table writes per page by item: %s\n", r.perPageOf(writeKinds, func(k string) float64 { return float64(r.Writes[k]) }))
	fmt.Fprintf(w, "table write units per page by item: %s\n", r.perPageOf(writeKinds, func(k string) float64 { return r.WriteUnits[k] }))
	if len(r.SlotWrites) > 0 {
		fmt.Fprintf(w, "politeness slot writes per page by function: %s\n",
			r.perPageOf(functionNames, func(fn string) float64 { return float64(r.SlotWrites[fn]) }))
	}
	var fns []string
	for _, fn := range functionNames {
		if b := r.Batches[fn]; b.Invocations > 0 {
			fns = append(fns, fmt.Sprintf("%s %.3f (%.1f records each, %.4f GB-s a page)", fn, r.per(float64(b.Invocations)),
				float64(b.Records)/float64(b.Invocations), r.per(b.GBSeconds)))
		}
	}
	if len(fns) > 0 {
		fmt.Fprintf(w, "invocations per page by function: %s\n", strings.Join(fns, ", "))
	}
	if len(r.SQSCalls) > 0 {
		calls := slices.SortedFunc(maps.Keys(r.SQSCalls), func(a, b string) int {
			return cmp.Or(cmp.Compare(r.SQSCalls[b], r.SQSCalls[a]), cmp.Compare(a, b))
		})
		fmt.Fprintf(w, "SQS requests per page by call and queue: %s\n",
			r.perPageOf(calls, func(c string) float64 { return float64(r.SQSCalls[c]) }))
	}
}

// printLedger writes the crawl's ledger against the meter, what the metric series take, and what
// the figures leave out.
func (r Report) printLedger(w io.Writer, p cost.Prices) {
	u := r.Units
	perM := func(usd float64) float64 { return r.per(usd) * 1e6 }
	if r.Ledger != (cost.Units{}) {
		meter, ledger := p.Cost(r.Crawled).Total, p.Cost(r.Ledger).Total
		fmt.Fprintf(w, "the crawl's own ledger (its record, which the budget reads): $%.2f per million pages; the meter, from the crawl's "+
			"first message to its end: $%.2f (the ledger %+.1f%%; it books each batch's receives and deletes, and its queue's pollers' "+
			"empty receives since the queue's batch before; both without the metric series)\n",
			perM(ledger), perM(meter), 100*(ledger-meter)/max(meter, 1e-12))
	}
	if u.MetricSeriesHours > 0 {
		pagesPerHour := float64(r.Pages) / max(r.Elapsed.Hours(), 1e-12)
		fmt.Fprintf(w, "CloudWatch metrics: %d of the stack's %d series written (a series with nothing to say writes no value, and is "+
			"not billed for that hour), billed by the month pro-rated by the hour: at this crawl's %.0f pages an hour a million "+
			"pages take %.1f hours, %.0f series-hours; the crawls that run at once share them (a crawl alone pays them all); "+
			"the alarms' metrics are billed by the month whatever runs, in the idle bill, not here\n",
			r.MetricSeries, len(metrics.Series), pagesPerHour, 1e6/max(pagesPerHour, 1e-12), 1e6*r.per(u.MetricSeriesHours))
	}
	if r.EarlyEmpty > 0 {
		fmt.Fprintf(w, "not counted: %d empty receives the emulator answered before their wait was over (%.2f per page), which SQS never does\n",
			r.EarlyEmpty, r.per(float64(r.EarlyEmpty)))
	}
	if u.DynamoDBUnmetered > 0 {
		fmt.Fprintf(w, "warning: %d DynamoDB answers carried no consumed capacity: its units are too low\n", u.DynamoDBUnmetered)
	}
}

// printHot writes the hottest table items, and the rate each would bound.
func (r Report) printHot(w io.Writer) {
	k := float64(max(r.Pages, 1)) / 1000
	if r.EvenHosts {
		// The web's pages are split evenly between its hosts (multisite): a host has Pages/Hosts.
		perHostPage := float64(r.HotHostWrites) / max(float64(r.Pages)/float64(max(r.Hosts, 1)), 1)
		fmt.Fprintf(w, "hottest per-host item: %s, %.1f writes per 1,000 pages (%.2f per page of its host, bounded by its host's rate: "+
			"1,000 writes/s would take a host of %.0f pages/s)\n", r.HotHost, float64(r.HotHostWrites)/k, perHostPage, 1000/max(perHostPage, 1e-9))
	} else {
		fmt.Fprintf(w, "hottest per-host item: %s, %d writes, %.1f per 1,000 pages of the crawl (the web's hosts differ in size, "+
			"so its host's pages are not known here; its writes are bounded by its host's rate)\n", r.HotHost, r.HotHostWrites, float64(r.HotHostWrites)/k)
	}
	fmt.Fprintf(w, "hottest other item: %s, %.1f writes per 1,000 pages (one partition takes 1,000 writes/s: a crawl of %.0f pages/s at most)\n",
		r.HotOther, float64(r.HotOtherWrites)/k, 1000/max(r.per(float64(r.HotOtherWrites)), 1e-9))
	if r.HotCrawl != "" {
		fmt.Fprintf(w, "hottest crawl item (the crawl's item or a counter shard, whose writes grow with the crawl's rate): %s, %.1f writes per 1,000 pages (a crawl of %.0f pages/s at most)\n",
			r.HotCrawl, float64(r.HotCrawlWrites)/k, 1000/max(r.per(float64(r.HotCrawlWrites)), 1e-9))
	}
}
