package finish

import (
	"hash/fnv"
	"sort"
	"strconv"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/cost"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
)

// The event's envelope, as EventBridge delivers it: source "crawlstack", detail-type
// "Crawl Finished" (or "Crawl Stalled" for a stall), and the Event as its detail.
const (
	Source            = "crawlstack"
	DetailType        = "Crawl Finished"
	DetailTypeStalled = "Crawl Stalled"
)

// The ends of a crawl (Event.End).
const (
	EndDrained = "drained" // every URL it admitted ended, every page was parsed
	EndStopped = "stopped" // its user stopped it (crawl stop) and its messages ran out
	EndBudget  = "budget"  // its budget ran out, so it admitted no more URLs, and the rest ran out
	// EndStalled is no end: the crawl's work stopped moving with work left (a "Crawl Stalled"
	// event, whose Stuck says what is left). Its checks stop until a new one takes them on.
	EndStalled = "stalled"
)

// Event is the detail of a crawl's "Crawl Finished" event: its counts and cost when it ended; or of
// its "Crawl Stalled" event (End is EndStalled): its counts and cost when it was found stalled, at
// FinishedAt, and what is stuck.
type Event struct {
	// EventID is the same for every copy of one crawl's event ("crawlstack:<crawl>:finished"):
	// EventBridge has no deduplication of its own, so a consumer that must act once keys on it.
	EventID string `json:"eventId"`
	Crawl   string `json:"crawl"`
	// End says why the crawl ended: EndDrained, EndStopped or EndBudget.
	End        string     `json:"end"`
	StartedAt  *time.Time `json:"startedAt,omitempty"`
	FinishedAt time.Time  `json:"finishedAt"`
	Counts     Counts     `json:"counts"`
	// CostUSD is the crawl's ledger priced at the stack's prices; Cost the same by service.
	CostUSD float64 `json:"costUsd"`
	Cost    Cost    `json:"cost"`
	// Stuck is what a stalled crawl has left (a "Crawl Stalled" event only).
	Stuck *Stuck `json:"stuck,omitempty"`
}

// Stuck is the work a stalled crawl has left, and where it likely is.
type Stuck struct {
	// QueuedURLs were admitted and never ended; UnparsedPages were fetched and their parse is not
	// marked done; UnadmittedLinks are Links messages sent and not marked admitted.
	QueuedURLs      int64 `json:"queuedUrls"`
	UnparsedPages   int64 `json:"unparsedPages"`
	UnadmittedLinks int64 `json:"unadmittedLinks"`
	// QuietSince is since when the crawl's counters have not moved.
	QuietSince time.Time `json:"quietSince"`
	// DeadLetterQueues are the queues whose dead-letter queue likely holds the work left
	// ("schedule" for Links messages, "fetch" for URLs, "parse" for pages).
	DeadLetterQueues []string `json:"deadLetterQueues"`
	// Exact: the counts are the exact tally of the crawl's items, not its counters.
	Exact bool `json:"exact"`
	// Next says how the crawl goes on.
	Next string `json:"next"`
}

// DetailTypeOf is the detail-type of e: DetailTypeStalled for a stall, DetailType for an end.
func (e Event) DetailTypeOf() string {
	if e.End == EndStalled {
		return DetailTypeStalled
	}
	return DetailType
}

// Counts are the crawl's URLs by state and class, tallied exactly from its items when it ended.
type Counts struct {
	Seen        int64 `json:"seen"`
	Fetched     int64 `json:"fetched"`
	Skipped     int64 `json:"skipped"`
	Failed      int64 `json:"failed"`
	StoppedURLs int64 `json:"stoppedUrls"`
	ParseErrors int64 `json:"parseErrors"`
	// RobotsRefused are the links parse dropped because their host's robots.txt refuses them:
	// never admitted, so not in Seen, nor in Classes' robots (the URLs the fetcher skipped).
	RobotsRefused int64            `json:"robotsRefusedLinks,omitempty"`
	Classes       map[string]int64 `json:"classes"`
	Responses     Responses        `json:"responses"`
}

// Responses are the crawl's counts of the responses its URLs ended with (crawlstate.Responses):
// URLs by the HTTP status of their last response, by code ("404") and by class ("4xx"), the
// bytes of those responses' bodies (decoded), and on a recrawl the pages changed and unchanged
// since the previous crawl.
type Responses struct {
	Statuses      map[string]int64 `json:"statuses"`
	StatusClasses map[string]int64 `json:"statusClasses"`
	Bytes         int64            `json:"bytes"`
	Changed       int64            `json:"changed"`
	Unchanged     int64            `json:"unchanged"`
}

// ResponsesOf are the counts r as an event, a status and a summary show them.
func ResponsesOf(r crawlstate.Responses) Responses {
	out := Responses{Statuses: map[string]int64{}, StatusClasses: r.ByClass(), Bytes: r.Bytes,
		Changed: r.Changed, Unchanged: r.Unchanged}
	for code, n := range r.Statuses {
		out.Statuses[strconv.Itoa(code)] = n
	}
	return out
}

// Cost is the crawl's ledger in dollars by service.
type Cost struct {
	SQS      float64 `json:"sqs"`
	DynamoDB float64 `json:"dynamodb"`
	S3       float64 `json:"s3"`
	Lambda   float64 `json:"lambda"`
	Logs     float64 `json:"logs"`
}

// EventID is the id of the crawl's event.
func EventID(crawl string) string { return "crawlstack:" + crawl + ":finished" }

// StallID is the id of the crawl's stall found by its check seq: the same for every copy of one
// stall's event, another for a later stall of the crawl.
func StallID(crawl string, seq int) string {
	return "crawlstack:" + crawl + ":stalled:" + strconv.Itoa(seq)
}

// stallEventOf is the "Crawl Stalled" event of crawl ch, found stalled now by its check seq with
// counts c and the work left (exact: from a tally).
func stallEventOf(ch crawlstate.Checks, seq int, c crawlstate.Counters, left crawlstate.Left, exact bool, quietSince, now time.Time, prices cost.Prices) Event {
	e := eventOf(ch, c, now, prices)
	e.EventID, e.End = StallID(ch.ID, seq), EndStalled
	st := &Stuck{QueuedURLs: left.Queued, UnparsedPages: left.Unparsed, UnadmittedLinks: left.Links,
		QuietSince: quietSince.UTC().Truncate(time.Millisecond), Exact: exact, DeadLetterQueues: []string{},
		Next: "crawl status " + ch.ID + " shows the dead-letter queues; crawl redrive QUEUE moves their messages back, " +
			"and crawl resume " + ch.ID + " (or a seed file of the crawl) starts its checks again: it ends once its work is done"}
	if left.Links > 0 {
		st.DeadLetterQueues = append(st.DeadLetterQueues, "schedule")
	}
	if left.Queued > 0 {
		st.DeadLetterQueues = append(st.DeadLetterQueues, "fetch")
	}
	if left.Unparsed > 0 {
		st.DeadLetterQueues = append(st.DeadLetterQueues, "parse")
	}
	e.Stuck = st
	return e
}

// eventOf is the event of crawl ch, ended now with counts c (exact) priced at prices.
func eventOf(ch crawlstate.Checks, c crawlstate.Counters, now time.Time, prices cost.Prices) Event {
	e := Event{EventID: EventID(ch.ID), Crawl: ch.ID, End: EndDrained, FinishedAt: now.UTC().Truncate(time.Millisecond),
		Counts: Counts{Seen: c.Seen, Fetched: c.Fetched, Skipped: c.Skipped, Failed: c.Failed,
			StoppedURLs: c.StoppedURLs, ParseErrors: c.ParseErrors, RobotsRefused: c.RobotsRefused, Classes: map[string]int64{},
			Responses: ResponsesOf(c.Responses)}}
	switch {
	case ch.Run == crawlstate.StoppedBy:
		e.End = EndStopped
	case ch.Stopped == crawlstate.StopBudget || c.Stopped == crawlstate.StopBudget:
		e.End = EndBudget
	}
	if !ch.Started.IsZero() {
		t := ch.Started.UTC()
		e.StartedAt = &t
	}
	for cl, n := range c.Classes {
		e.Counts.Classes[string(cl)] = n
	}
	cost := prices.Cost(c.Cost)
	e.CostUSD = cost.Total
	e.Cost = Cost{SQS: cost.SQS, DynamoDB: cost.DynamoDB, S3: cost.S3, Lambda: cost.Lambda, Logs: cost.Logs}
	return e
}

// fingerprint sums up the crawl's counters of URLs, parse errors, pages and Links messages (not
// its ledger, which every check adds to): it changes whenever a URL is admitted or ends, a page is
// stored or parsed, or a Links message is named or admitted.
func fingerprint(c crawlstate.Counters) int64 {
	h := fnv.New64a()
	for _, n := range []int64{c.Seen, c.Fetched, c.Skipped, c.Failed, c.StoppedURLs, c.ParseErrors,
		c.Pages, c.PagesParsed, c.LinksNamed, c.LinksAdmitted} {
		h.Write(strconv.AppendInt(nil, n, 10))
		h.Write([]byte{0})
	}
	classes := make([]errclass.Class, 0, len(c.Classes))
	for cl := range c.Classes {
		classes = append(classes, cl)
	}
	sort.Slice(classes, func(i, j int) bool { return classes[i] < classes[j] })
	for _, cl := range classes {
		h.Write([]byte(cl))
		h.Write(strconv.AppendInt(nil, c.Classes[cl], 10))
		h.Write([]byte{0})
	}
	return int64(h.Sum64())
}
