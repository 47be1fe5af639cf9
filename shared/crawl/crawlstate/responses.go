package crawlstate

import (
	"strconv"
	"strings"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// A crawl's responses in its summary: how many URLs ended with each HTTP status, the body bytes
// they brought, and on a recrawl how many pages changed since the previous crawl. They are counted
// where a URL's outcome is recorded (Record), in the same counter write as its state: a recorded
// outcome is counted once (Record's replay and a redelivered message record nothing new), and the
// write itself counts once (countwrite.go). A tally has no way to count them from the URL items,
// so it takes them from the counters (addCounted).

// Change is what a recrawl found of a page the previous crawl fetched.
type Change string

// The changes a recrawl counts; "" is a URL the previous crawl did not fetch (or no recrawl).
const (
	// Changed: the page was fetched whole, its payload new or different.
	Changed Change = "changed"
	// Unchanged: the page was stored as a revisit of the previous crawl's (a 304, the same payload
	// digest, or a sitemap's lastmod not after the previous fetch).
	Unchanged Change = "unchanged"
)

// Responses are a crawl's counts of the responses its URLs ended with.
type Responses struct {
	// Statuses counts the URLs by the HTTP status of the last response each got (the final one,
	// after redirects), whatever their state: 200s fetched, 404s failed, a PDF skipped for its
	// type. A URL that never got an answer (DNS, robots, a refused address, a timeout) has none.
	Statuses map[int]int64
	// Bytes is the sum of those responses' bodies, decoded (gzip, deflate, br), as far as read.
	Bytes int64
	// Changed and Unchanged count the pages a recrawl fetched anew or found unchanged; the others
	// fetched were new to it.
	Changed, Unchanged int64
}

// ByClass is Statuses summed by class: "2xx", "3xx", "4xx", "5xx".
func (r Responses) ByClass() map[string]int64 {
	out := map[string]int64{}
	for code, n := range r.Statuses {
		out[strconv.Itoa(code/100)+"xx"] += n
	}
	return out
}

// The counter attributes of Responses: the status counts are "sc<code>".
const (
	counterStatusPrefix = "sc"
	counterBytes        = "resp_bytes"
	counterChanged      = "changed"
	counterUnchanged    = "unchanged"
)

// statusCounter is the counter of URLs that ended with status code, or "" for no valid code.
func statusCounter(code int) string {
	if code < 100 || code > 999 {
		return ""
	}
	return counterStatusPrefix + strconv.Itoa(code)
}

// addResponseCounts adds o's response to counts.
func addResponseCounts(counts map[string]int64, o Outcome) {
	if name := statusCounter(o.Status); name != "" {
		counts[name]++
	}
	if o.Bytes > 0 {
		counts[counterBytes] += o.Bytes
	}
	switch o.Change {
	case Changed:
		counts[counterChanged]++
	case Unchanged:
		counts[counterUnchanged]++
	}
}

// add adds to r what the counter item it holds of the crawl's responses.
func (r *Responses) add(it table.Item) {
	r.Bytes += it.Int(counterBytes)
	r.Changed += it.Int(counterChanged)
	r.Unchanged += it.Int(counterUnchanged)
	for name := range it {
		digits, ok := strings.CutPrefix(name, counterStatusPrefix)
		if !ok || len(digits) != 3 {
			continue
		}
		code, err := strconv.Atoi(digits)
		if err != nil || statusCounter(code) != name {
			continue
		}
		if n := it.Int(name); n != 0 {
			if r.Statuses == nil {
				r.Statuses = map[int]int64{}
			}
			r.Statuses[code] += n
		}
	}
}
