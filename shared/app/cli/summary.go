package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/layout"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/finish"
	"github.com/crawlstack/crawlstack/shared/crawl/records"
	"golang.org/x/term"
)

// summarize reads the crawl's counts (finalCounts, exact as it says) and the dead-letter queues'
// depths.
func summarize(ctx context.Context, st *crawlstate.Store, be *Backend, res Resources, crawl string, start time.Time, sum Summary, exact bool) (Summary, error) {
	elapsed := time.Since(start)
	sum.ElapsedSeconds = elapsed.Seconds()
	c, err := finalCounts(ctx, st, crawl, exact)
	if err != nil {
		return sum, err
	}
	sum.Counts, sum.tally = countsOf(c), c
	sum.Pages = existing(be, layout.PagesDir(crawl), c.Fetched)
	sum.Records = existing(be, records.Dir(crawl), c.Fetched)
	for _, u := range c.GaveUp {
		sum.GaveUp = append(sum.GaveUp, GaveUp{URL: u.URL, Class: string(u.Class), Detail: u.Detail})
	}
	sum.Stopped = c.Stopped
	sum.Throttled, sum.Circuits = throttledOf(c.Throttled, time.Now()), circuitsOf(c.Circuits)
	if be.Metered {
		sum.CostUSD = sum.prices.Cost(c.Cost).Total
	}
	sum.FetchedThisRun = c.Fetched - sum.fetchedBefore
	if elapsed > 0 {
		sum.PagesPerSecond = float64(sum.FetchedThisRun) / elapsed.Seconds()
	}
	sum.DeadLetters = map[string]int{}
	for name, q := range map[string]string{"schedule": res.ScheduleDLQ, "fetch": res.FetchDLQ, "parse": res.ParseDLQ, "render": res.RenderDLQ} {
		if q == "" {
			continue
		}
		v, nv, err := be.Queue.Depth(ctx, q)
		if err != nil {
			return sum, fmt.Errorf("depth of the %s dead-letter queue: %w", name, err)
		}
		if v+nv > 0 {
			sum.DeadLetters[name] = v + nv
		}
	}
	return sum, nil
}

// finalCounts counts the crawl's URLs for its summary. Its counters may drift by one for each
// process that died between a URL's transition and its count, so the count is a scan of its items
// (crawlstate.URLs.Tally), unless exact says that the counters missed nothing: one process
// counted every transition of the crawl, from its start to a clean end (crawl run on the embedded
// backend, whose state it locks, of a crawl it started). Then the counters are read instead, a
// few milliseconds where the scan of a crawl of 5,000 URLs takes 40 to 50; but not for a crawl with
// failed URLs, which the summary lists from their items, nor for a stopped one.
func finalCounts(ctx context.Context, st *crawlstate.Store, crawl string, exact bool) (crawlstate.Counters, error) {
	if exact {
		c, err := st.CountersWithHosts(ctx, crawl)
		if err != nil {
			return c, err
		}
		if c.Failed == 0 && c.StoppedURLs == 0 && c.Stopped == "" && c.Classes[errclass.Stopped] == 0 {
			return c, nil
		}
	}
	return st.Tally(ctx, crawl)
}

// existing is where the objects under prefix are, or "" when there are none: on the embedded
// backend the directory is looked at; elsewhere a crawl that fetched no page stored nothing.
func existing(be *Backend, prefix string, fetched int64) string {
	where := be.Where(prefix)
	if be.Exists != nil {
		if !be.Exists(where) {
			return ""
		}
	} else if fetched == 0 {
		return ""
	}
	return where
}

// printSummary writes the human summary on stdout; with asJSON, it writes the summary as one JSON
// document on stdout instead, and the human one on stderr, so that stdout can go to jq.
func printSummary(stdout, stderr io.Writer, s Summary, asJSON bool, h hints) {
	w := stdout
	if asJSON {
		w = stderr
	}
	state := "finished"
	if !s.Finished {
		state = "stopped"
	}
	switch {
	case s.Crawl == "":
		printWentOn(w, s)
		if asJSON {
			b, _ := json.Marshal(s)
			fmt.Fprintf(stdout, "%s\n", b)
		}
		return
	case s.AlreadyEnded:
		fmt.Fprintf(w, "crawl %s had already ended\n", s.Crawl)
	default:
		fmt.Fprintf(w, "crawl %s %s in %.1fs\n", s.Crawl, state, s.ElapsedSeconds)
	}
	fmt.Fprintf(w, "  seen %d  fetched %d  skipped %d  failed %d  stopped %d  pending %d  (%.1f pages/s)\n",
		s.Seen, s.Fetched, s.Skipped, s.Failed, s.StoppedURLs, s.Pending, s.PagesPerSecond)
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
	printGaveUp(w, s.GaveUp, s.Failed)
	printThrottled(w, s.Throttled)
	printCircuits(w, s.Circuits)
	printLimits(w, s)
	if s.BadSeedLines > 0 {
		fmt.Fprintf(w, "  bad seed lines skipped: %d\n", s.BadSeedLines)
	}
	for q, n := range s.DeadLetters {
		fmt.Fprintf(w, "  %d messages in the %s dead-letter queue (%s)\n", n, q, h.cmd("redrive", q))
	}
	for _, a := range s.Also {
		fmt.Fprintf(w, "  this run also advanced crawl %s: seen %d  fetched %d  skipped %d  failed %d  pending %d\n",
			a.Crawl, a.Seen, a.Fetched, a.Skipped, a.Failed, a.Pending)
	}
	if s.Event != nil {
		fmt.Fprintf(w, "  end announced:    %s (%q, end %s)\n", s.eventFile, finish.DetailType, s.Event.End)
	}
	if s.Pages != "" {
		fmt.Fprintf(w, "  pages (WARC):     %s\n", s.Pages)
	}
	if s.Records != "" {
		fmt.Fprintf(w, "  records (JSONL):  %s\n", s.Records)
	}
	if asJSON {
		b, _ := json.Marshal(s)
		fmt.Fprintf(stdout, "%s\n", b)
	}
}

// printWentOn writes the counts of each crawl a run without a seed file went on with.
func printWentOn(w io.Writer, s Summary) {
	fmt.Fprintf(w, "went on with the state directory's work in %.1fs: %d pages fetched\n", s.ElapsedSeconds, s.FetchedThisRun)
	for _, a := range s.Also {
		fmt.Fprintf(w, "  crawl %s: seen %d  fetched %d  skipped %d  failed %d  pending %d\n",
			a.Crawl, a.Seen, a.Fetched, a.Skipped, a.Failed, a.Pending)
	}
}

// printGaveUp writes the failed URLs the summary lists, and says when they are not all of them.
func printGaveUp(w io.Writer, gaveUp []GaveUp, failed int64) {
	if len(gaveUp) == 0 {
		return
	}
	more := ""
	if int64(len(gaveUp)) < failed {
		more = fmt.Sprintf(" (the first %d of %d)", len(gaveUp), failed)
	}
	fmt.Fprintf(w, "  given up%s:\n", more)
	for _, g := range gaveUp {
		fmt.Fprintf(w, "    %q  %s  %q\n", g.URL, g.Class, g.Detail) // quoted: both come from the web
	}
}

// printLimits writes what the crawl's limits did: its metered cost, the links over --max-pages,
// and a stop by its budget or by its user.
func printLimits(w io.Writer, s Summary) {
	if s.CostUSD > 0 {
		fmt.Fprintf(w, "  metered AWS cost: $%.4f\n", s.CostUSD)
	}
	if n := s.Classes[string(errclass.Budget)]; n > 0 && s.Stopped != crawlstate.StopBudget {
		fmt.Fprintf(w, "  --max-pages: %d links were over it and not crawled (class budget)\n", n)
	}
	if s.Stopped == crawlstate.StopBudget {
		fmt.Fprintf(w, "  budget: the crawl reached its budget of $%.4f and stopped admitting URLs (%d links not admitted);"+
			" what it had admitted was crawled to the end\n", s.BudgetUSD, s.Classes[string(errclass.Budget)])
	}
	if s.Stopped == crawlstate.StopUser {
		fmt.Fprintf(w, "  stopped by its user (crawl stop): %d queued URLs ended stopped, and no link was admitted since (%d links not admitted)\n",
			s.StoppedURLs, s.StopRefused)
	}
}

// progress prints a live status line on a terminal.
type progress struct {
	done chan struct{}
	wg   sync.WaitGroup
}

func (p *progress) stop() {
	if p.done == nil {
		return
	}
	close(p.done)
	p.wg.Wait()
}

// Progress intervals: the counters are the sum of 129 items (crawlstate.CounterShards and the
// crawl item), which DynamoDB bills one read unit each: every half second that would be about
// $0.12 an hour, so the AWS backend reads them every 5 seconds ($0.012 an hour).
const (
	progressEmbedded = 500 * time.Millisecond
	progressAWS      = 5 * time.Second
)

// progressOf is what the progress line shows: the crawl's counters in st, this run's rate since
// start, and what the run waits for.
type progressOf struct {
	crawl         string
	st            *crawlstate.Store
	start         time.Time
	every         time.Duration
	fetchedBefore int64 // not this run's: left out of the rate
	waiting       func(ctx context.Context) string
}

// startProgress shows this run's pages/s, queued, fetched, failed and skipped every interval
// when w is a terminal, and what the run waits for when no message is ready; otherwise it stays
// quiet.
func startProgress(ctx context.Context, w io.Writer, quiet bool, po progressOf) *progress {
	p := &progress{}
	f, ok := w.(interface{ Fd() uintptr })
	if quiet || !ok || !term.IsTerminal(int(f.Fd())) {
		return p
	}
	p.done = make(chan struct{})
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(po.every)
		defer t.Stop()
		for {
			select {
			case <-p.done:
				fmt.Fprint(w, "\r\033[K")
				return
			case <-ctx.Done():
				fmt.Fprint(w, "\r\033[K")
				return
			case <-t.C:
			}
			c, err := po.st.Counters(ctx, po.crawl)
			if err != nil {
				continue
			}
			secs := time.Since(po.start).Seconds()
			line := fmt.Sprintf("%5.0fs  %6.1f pages/s  queued %d  fetched %d  failed %d  skipped %d",
				secs, float64(c.Fetched-po.fetchedBefore)/secs, c.Pending(), c.Fetched, c.Failed, c.Skipped)
			if c.Pending() > 0 {
				if wait := po.waiting(ctx); wait != "" {
					line += "  " + wait
				}
			}
			fmt.Fprint(w, "\r\033[K"+line)
		}
	}()
	return p
}
