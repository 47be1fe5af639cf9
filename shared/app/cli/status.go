package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/cost"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/finish"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// Status is what `crawl status CRAWL` shows, and prints as JSON with --json.
type Status struct {
	Crawl string `json:"crawl"`
	// State is running, interrupted (work is pending and no crawl run works on the embedded
	// backend's state directory: a run was stopped with Ctrl-C or killed), paused, stopped (its
	// user stopped it), stalled (its drain checks found its work still with work left, announced
	// it and stopped: package finish), or finished (nothing pending).
	State   string    `json:"state"`
	Started time.Time `json:"started,omitzero"`
	// Counts' PagesPerSecond is over the time since the crawl started, while it has URLs pending
	// (0 once it has none: the rate would only fall as time goes by).
	Counts
	// CostUSD is the crawl's ledger at list prices: what its handlers were metered for so far
	// (on AWS; the embedded backend bills nothing).
	CostUSD float64 `json:"costUsd"`
	// StoppedWhy is why the crawl stopped admitting URLs, if it did: "budget" or "user".
	StoppedWhy string `json:"stoppedWhy,omitempty"`
	// Queues are the depths of the queues, which every crawl of the backend shares.
	Queues map[string]Depth `json:"queues"`
	// Waiting says what the crawl waits for, one reason a line.
	Waiting []string `json:"waiting"`
	// End is how far the crawl's end is announced (package finish): "announced" once its
	// Crawl Finished event was sent, "pending" between its decision and the send; empty before.
	End string `json:"end,omitempty"`
	// Stall is how far the crawl's stall is announced, as End is: its Crawl Stalled event; empty
	// when it is not stalled. StalledAt is when it was found stalled.
	Stall     string    `json:"stall,omitempty"`
	StalledAt time.Time `json:"stalledAt,omitzero"`
	// Throttled are the hosts whose gap the crawl widened after their 429s, failures in a row or
	// slow answers, with their gap now.
	Throttled []Throttled `json:"throttled"`
	// Circuits are the hosts whose circuit the crawl opened after their failures in a row.
	Circuits []Circuit `json:"circuits"`

	metered bool // the backend's calls are metered (AWS): CostUSD is what they cost
}

// Depth is a queue's depth: messages visible, and in flight or delayed.
type Depth struct {
	Visible  int `json:"visible"`
	InFlight int `json:"inFlightOrDelayed"`
}

// CrawlListing is a line of `crawl status` with no crawl named.
type CrawlListing struct {
	Crawl   string    `json:"crawl"`
	State   string    `json:"state"`
	Started time.Time `json:"started,omitzero"`
	Fetched int64     `json:"fetched"`
	Pending int64     `json:"pending"`
}

// adminHelp is what the help of the commands about a crawl says besides their usage and flags.
var adminHelp = map[string]cmdHelp{
	"status": {about: "A crawl's progress, cost, queues and what it waits for; with no CRAWL, the crawls on record.",
		examples: "crawl status\ncrawl status --state my-crawl seeds-3e53e0c6c911\ncrawl status --json seeds-3e53e0c6c911 | jq .waiting"},
	"pause": {about: "Pause a crawl: its fetch messages wait in the queue, and no URL is claimed.", examples: "crawl pause seeds-3e53e0c6c911"},
	"resume": {about: "Resume a paused crawl. With --backend aws it also sends the crawl a drain check: a paused crawl's checks go on at their normal pace, and a stalled crawl's (crawl status says stalled) start again, to end it once the work moved back from the dead-letter queues (crawl redrive) is done.",
		examples: "crawl resume seeds-3e53e0c6c911\ncrawl redrive --backend aws schedule && crawl resume --backend aws seeds-3e53e0c6c911"},
	"stop": {about: "Stop a crawl for good: its queued URLs end stopped and no link is admitted.", examples: "crawl stop seeds-3e53e0c6c911"},
	"failures": {about: "The URLs of a crawl that ended without a page (failed, skipped, stopped), with class and detail.",
		examples: "crawl failures seeds-3e53e0c6c911\ncrawl failures --class http_5xx,timeout --csv seeds-3e53e0c6c911 > failed.csv"},
	"index": {about: "Build a crawl's CDXJ index from its WARC files and store it at indexes/CRAWL.cdxj (docs/warc.md).",
		examples: "crawl index seeds-3e53e0c6c911\ncrawl index --backend aws -o mycrawl.cdxj seeds-3e53e0c6c911"},
	"export": {about: "Write a crawl's records into one file, as JSON lines or CSV (a column per extracted field), each page once (docs/results.md).",
		examples: "crawl export -o pages.jsonl seeds-3e53e0c6c911\ncrawl export --format csv -o pages.csv seeds-3e53e0c6c911\ncrawl export --backend aws seeds-3e53e0c6c911 | jq -r .title"},
	"optout": optoutHelp,
	"purge":  purgeHelp,
	"redrive": {about: "Move the messages of a dead-letter queue (schedule, fetch or parse) back to its queue.",
		examples: "crawl redrive fetch\ncrawl redrive --class http_5xx,timeout fetch"},
}

// adminFlags parses the flags that the commands about a crawl share (--state, --backend, and
// --json when asJSON is not nil) and the command's own (extra), and returns the arguments left.
func adminFlags(name, args string, argv []string, asJSON *bool, extra ...func(*flag.FlagSet)) (RunOptions, []string, error) {
	o := RunOptions{}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.StringVar(&o.State, "state", "crawl-state", "state directory of the embedded backend")
	fs.StringVar(&o.Backend, "backend", "embedded", "embedded, or aws (as crawl run --help says)")
	fs.StringVar(&o.Stack, "stack", "", "a deployed stack's name: its outputs name the table, bucket and queues (implies --backend aws)")
	if asJSON != nil {
		fs.BoolVar(asJSON, "json", false, "print JSON")
	}
	for _, add := range extra {
		add(fs)
	}
	h := adminHelp[name]
	h.usage = fmt.Sprintf("crawl %s [--state DIR] [--backend embedded|aws] [--stack NAME] %s", name, args)
	if err := parseFlags(fs, argv, h); err != nil {
		return o, nil, err
	}
	if o.Backend != "embedded" && o.Backend != "aws" {
		return o, nil, fmt.Errorf("--backend %q: want embedded or aws", o.Backend)
	}
	if o.Stack != "" {
		given := false
		fs.Visit(func(f *flag.Flag) { given = given || f.Name == "backend" })
		if given && o.Backend != "aws" {
			return o, nil, fmt.Errorf("--stack %s is a deployed stack: it needs --backend aws, not %s", o.Stack, o.Backend)
		}
		o.Backend = "aws"
	}
	return o, fs.Args(), nil
}

// setRun is `crawl pause | resume | stop CRAWL`.
func setRun(ctx context.Context, cmd string, args []string, stdout, stderr io.Writer) int {
	to := map[string]crawlstate.Run{"pause": crawlstate.Paused, "resume": crawlstate.Running, "stop": crawlstate.StoppedBy}[cmd]
	o, rest, err := adminFlags(cmd, "CRAWL", args, nil)
	if err != nil {
		return usageError(stdout, stderr, cmd, err)
	}
	if len(rest) != 1 {
		fmt.Fprintf(stderr, "crawl %s: want exactly one CRAWL (crawl list lists them), got %d arguments\n", cmd, len(rest))
		return ExitUsage
	}
	be, err := openExisting(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "crawl %s: %v\n", cmd, err)
		return ExitFailed
	}
	defer be.Close()
	st := crawlstate.New(be.Table)
	crawl, err := pickCrawl(ctx, st, rest, hintsOf(o)) // rest[0], or the newest for latest
	if err != nil {
		fmt.Fprintf(stderr, "crawl %s: %v\n", cmd, err)
		return ExitFailed
	}
	if err := st.SetRun(ctx, crawl, to); err != nil {
		fmt.Fprintf(stderr, "crawl %s: %v\n", cmd, err)
		return ExitFailed
	}
	switch to {
	case crawlstate.Paused:
		fmt.Fprintf(stdout, "crawl %s paused: within seconds its fetch messages wait in the queue (%s goes on)\n", crawl, hintsOf(o).cmd("resume", crawl))
	case crawlstate.Running:
		fmt.Fprintf(stdout, "crawl %s resumed: its waiting fetch messages go on as they come back from their wait\n", crawl)
		if o.Backend != "aws" {
			break
		}
		if sent, err := resumeChecks(ctx, be, st, crawl); err != nil {
			fmt.Fprintf(stderr, "crawl %s: %v\n", cmd, err)
			return ExitFailed
		} else if sent {
			fmt.Fprintf(stdout, "sent a drain check: the crawl's checks go on at their normal pace (a stalled crawl's start again)\n")
		}
	default:
		fmt.Fprintf(stdout, "crawl %s stopped: within seconds no link is admitted and its queued URLs end stopped\n", crawl)
	}
	return ExitOK
}

// status is `crawl status [CRAWL]`.
func status(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var asJSON bool
	var watch time.Duration
	o, rest, err := adminFlags("status", "[--watch 5s] [CRAWL]", args, &asJSON, func(fs *flag.FlagSet) {
		fs.DurationVar(&watch, "watch", 0, "refresh every this long until the crawl has nothing left to do or Ctrl-C (at least 1s; 0: once)")
	})
	if err != nil {
		return usageError(stdout, stderr, "status", err)
	}
	if len(rest) > 1 {
		fmt.Fprintf(stderr, "crawl status: want at most one CRAWL, got %d arguments\n", len(rest))
		return ExitUsage
	}
	if watch != 0 && (watch < MinWatch || len(rest) != 1) {
		fmt.Fprintf(stderr, "crawl status: --watch %v: want at least %v, and one CRAWL to watch\n", watch, MinWatch)
		return ExitUsage
	}
	be, err := openExisting(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "crawl status: %v\n", err)
		return ExitFailed
	}
	defer be.Close()
	st := crawlstate.New(be.Table)
	if len(rest) == 0 {
		list, err := listAll(ctx, st, be) // as crawl list
		if err != nil {
			fmt.Fprintf(stderr, "crawl status: %v\n", err)
			return ExitFailed
		}
		printList(stdout, list, asJSON)
		return ExitOK
	}
	if rest[0] == latest {
		if rest[0], err = pickCrawl(ctx, st, rest, hintsOf(o)); err != nil {
			fmt.Fprintf(stderr, "crawl status: %v\n", err)
			return ExitFailed
		}
	}
	if watch > 0 {
		if err := watchStatus(ctx, st, be, rest[0], watch, asJSON, stdout, hintsOf(o)); err != nil {
			fmt.Fprintf(stderr, "crawl status: %v\n", err)
			return ExitFailed
		}
		return ExitOK
	}
	s, err := crawlStatus(ctx, st, be, rest[0], time.Now(), hintsOf(o))
	if err != nil {
		fmt.Fprintf(stderr, "crawl status: %v\n", err)
		return ExitFailed
	}
	if asJSON {
		b, _ := json.Marshal(s)
		fmt.Fprintf(stdout, "%s\n", b)
	} else {
		printStatus(stdout, s)
	}
	return ExitOK
}

// listCrawls reads the crawls on record with their counters.
func listCrawls(ctx context.Context, st *crawlstate.Store, be *Backend) ([]CrawlListing, error) {
	crawls, err := st.Crawls(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]CrawlListing, 0, len(crawls))
	for _, c := range crawls {
		n, err := st.Counters(ctx, c.ID)
		if err != nil {
			return nil, err
		}
		out = append(out, CrawlListing{Crawl: c.ID, State: stateNow(be, c, n), Started: c.Started, Fetched: n.Fetched, Pending: n.Pending()})
	}
	return out, nil
}

// stateOf is the crawl's state as status shows it: finished once its end is decided (a crawl
// with no URL pending may still have pages to parse and links to admit).
func stateOf(c crawlstate.Crawl, n crawlstate.Counters) string {
	switch {
	case c.Run == crawlstate.StoppedBy:
		return "stopped"
	case c.Run == crawlstate.Paused:
		return "paused"
	case c.Stall != "":
		return "stalled"
	case c.End != "":
		return "finished"
	}
	return "running"
}

// stateNow is stateOf, with a running crawl that no crawl run works on interrupted (the embedded
// backend, whose runs lock its state directory).
func stateNow(be *Backend, c crawlstate.Crawl, n crawlstate.Counters) string {
	s := stateOf(c, n)
	switch {
	case s != "running":
	case be.Active != nil && !be.Active():
		return "interrupted"
	case be.Active == nil && n.Seen > 0 && n.Pending() == 0 && c.End == "":
		// On AWS a stack deployed with finishEvent=false runs no drain checks, which decide the
		// end: a crawl with no URL pending is shown finished, as before they decided it.
		return "finished"
	}
	return s
}

// crawlStatus reads the crawl's record, counters and the queues' depths.
func crawlStatus(ctx context.Context, st *crawlstate.Store, be *Backend, crawl string, now time.Time, h hints) (Status, error) {
	ch, err := st.ChecksOf(ctx, crawl)
	if errors.Is(err, table.ErrNotFound) {
		return Status{}, fmt.Errorf("no crawl %s on record (crawl list lists them)", crawl)
	}
	if err != nil {
		return Status{}, err
	}
	c := ch.Crawl
	n, err := st.CountersWithHosts(ctx, crawl)
	if err != nil {
		return Status{}, err
	}
	s := Status{Crawl: crawl, State: stateNow(be, c, n), Started: c.Started, Counts: countsOf(n), StoppedWhy: n.Stopped,
		CostUSD: cost.DefaultPrices().Cost(n.Cost).Total, Queues: map[string]Depth{}, Waiting: []string{}, End: string(ch.End),
		Stall: string(ch.Stall), StalledAt: ch.StallAt}
	s.Throttled, s.Circuits = throttledOf(n.Throttled, now), circuitsOf(n.Circuits)
	if !c.Started.IsZero() && now.After(c.Started) && s.Pending > 0 {
		s.PagesPerSecond = float64(n.Fetched) / now.Sub(c.Started).Seconds()
	}
	res, err := findQueues(ctx, be)
	if err != nil {
		return s, err
	}
	for _, q := range queueNames(&res) {
		if q.optional && q.addr == "" {
			continue // a stack deployed without the render step
		}
		v, nv, err := be.Queue.Depth(ctx, q.addr)
		if err != nil {
			return s, fmt.Errorf("depth of the %s queue: %w", q.name, err)
		}
		s.Queues[q.name] = Depth{Visible: v, InFlight: nv}
	}
	s.Waiting = append(s.Waiting, waitingFor(s, h)...)
	s.metered = be.Metered
	return s, nil
}

// waitingFor says what keeps the crawl from going on, as far as its record and the queues tell,
// with the commands that help written as h writes them.
func waitingFor(s Status, h hints) []string {
	var why []string
	switch s.State {
	case "interrupted":
		why = append(why, fmt.Sprintf("no crawl run works on it (one was interrupted): %s goes on with what the state directory holds", h.cmd("run")))
	case "paused":
		why = append(why, fmt.Sprintf("paused by its user: its fetch messages wait in the queue (%s)", h.cmd("resume", s.Crawl)))
	case "stopped":
		if s.Pending > 0 {
			why = append(why, "stopped by its user: its queued URLs end stopped as their messages come")
		}
	case "stalled":
		why = append(why, fmt.Sprintf("stalled: its work stood still with work left, and its drain checks stopped;"+
			" move the dead-letter queues below back (%s), then %s starts its checks again", h.cmd("redrive", "QUEUE"), h.cmd("resume", s.Crawl)))
	}
	if s.StoppedWhy == crawlstate.StopBudget {
		why = append(why, "its budget is spent: it admits no more URLs and drains what it admitted")
	}
	work := 0
	held := 0
	for _, name := range workQueues {
		work += s.Queues[name].Visible
		held += s.Queues[name].InFlight
	}
	if s.Pending > 0 && s.State == "running" && work == 0 {
		if held > 0 {
			why = append(why, fmt.Sprintf("%d messages in flight or delayed and none visible: politeness waits, retries,"+
				" a robots.txt that is down, or messages a killed run left invisible until their visibility timeout", held))
		}
	}
	if slow := slowedNow(s.Throttled); s.Pending > 0 && slow > 0 {
		why = append(why, fmt.Sprintf("%d hosts throttled after their 429s, failures or slow answers: their requests are spaced wider until the gap decays", slow))
	}
	if open := openNow(s.Circuits); s.Pending > 0 && open > 0 {
		why = append(why, fmt.Sprintf("%d hosts with their circuit open after failures in a row: their URLs wait for a probe to answer", open))
	}
	for _, name := range []string{"schedule", "fetch", "parse"} {
		if d := s.Queues[name+"-dlq"]; d.Visible+d.InFlight > 0 {
			why = append(why, fmt.Sprintf("%d messages in the %s dead-letter queue (%s)", d.Visible+d.InFlight, name, h.cmd("redrive", name)))
		}
	}
	return why
}

// printStatus writes the status screen.
func printStatus(w io.Writer, s Status) {
	fmt.Fprintf(w, "crawl %s: %s", s.Crawl, s.State)
	if !s.Started.IsZero() {
		fmt.Fprintf(w, " (started %s)", s.Started.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(w, "\n  seen %d  fetched %d  skipped %d  failed %d  stopped %d  pending %d",
		s.Seen, s.Fetched, s.Skipped, s.Failed, s.StoppedURLs, s.Pending)
	if s.PagesPerSecond > 0 {
		fmt.Fprintf(w, "  (%.1f pages/s since the start)", s.PagesPerSecond)
	}
	fmt.Fprintln(w)
	if len(s.Classes) > 0 {
		fmt.Fprintf(w, "  by class: %s\n", classLine(s.Classes))
	}
	if s.ParseErrors > 0 {
		fmt.Fprintf(w, "  parse errors: %d\n", s.ParseErrors)
	}
	if s.RobotsRefused > 0 {
		fmt.Fprintf(w, "  links refused by robots.txt before admission: %d\n", s.RobotsRefused)
	}
	printResponses(w, s.Responses)
	if s.StopRefused > 0 {
		fmt.Fprintf(w, "  links not admitted since the stop: %d\n", s.StopRefused)
	}
	switch crawlstate.End(s.End) {
	case crawlstate.EndAnnounced:
		fmt.Fprintf(w, "  end: announced (its %q event was sent)\n", finish.DetailType)
	case crawlstate.EndPending:
		fmt.Fprintf(w, "  end: decided, its %q event not yet sent (the check or run that decided it sends it when it runs again)\n", finish.DetailType)
	}
	switch crawlstate.End(s.Stall) {
	case crawlstate.StallAnnounced:
		fmt.Fprintf(w, "  stalled at %s: its %q event was sent, and its checks stopped\n", s.StalledAt.UTC().Format(time.RFC3339), finish.DetailTypeStalled)
	case crawlstate.StallPending:
		fmt.Fprintf(w, "  stalled at %s: its %q event not yet sent, and its checks stopped\n", s.StalledAt.UTC().Format(time.RFC3339), finish.DetailTypeStalled)
	}
	if s.metered {
		fmt.Fprintf(w, "  cost so far: $%.4f (the crawl's metered AWS units at list prices)\n", s.CostUSD)
	} else {
		fmt.Fprintln(w, "  cost so far: none (the embedded backend bills nothing)")
	}
	fmt.Fprintf(w, "  queues (all crawls): ")
	parts := []string{}
	for _, name := range []string{"schedule", "fetch", "fetchslow", "parse", "schedule-dlq", "fetch-dlq", "parse-dlq"} {
		if d, ok := s.Queues[name]; ok {
			parts = append(parts, fmt.Sprintf("%s %d+%d", name, d.Visible, d.InFlight))
		}
	}
	fmt.Fprintf(w, "%s (visible+in flight or delayed)\n", strings.Join(parts, ", "))
	printThrottled(w, s.Throttled)
	printCircuits(w, s.Circuits)
	for _, why := range s.Waiting {
		fmt.Fprintf(w, "  waiting: %s\n", why)
	}
}
