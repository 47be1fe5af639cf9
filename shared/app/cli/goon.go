package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/crawlstack/crawlstack/shared/app/pipeline"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
)

// tally is the part of a crawl's counters that tells whether a run advanced it.
type tally struct{ seen, fetched, skipped, failed, stopped int64 }

func tallyOf(c crawlstate.Counters) tally {
	return tally{c.Seen, c.Fetched, c.Skipped, c.Failed, c.StoppedURLs}
}

// countsOnRecord reads the counters of every crawl on record (a scan: the embedded backend only).
func countsOnRecord(ctx context.Context, st *crawlstate.Store) (map[string]crawlstate.Counters, error) {
	all, err := st.Crawls(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]crawlstate.Counters{}
	for _, c := range all {
		if out[c.ID], err = st.Counters(ctx, c.ID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// goOn is crawl run without a seed file: it goes on with what the state directory holds, the
// queued messages of every crawl (after a redrive, say) and the unfinished crawls, and summarizes
// every crawl the run advanced.
func goOn(ctx context.Context, o RunOptions, be *Backend, res Resources, h *pipeline.Handlers, log *slog.Logger,
	sum Summary, stdout, stderr io.Writer) (Summary, int) {
	before, err := countsOnRecord(ctx, h.State)
	if err != nil {
		fmt.Fprintf(stderr, "crawl: %v\n", err)
		return sum, ExitFailed
	}
	queued := 0
	for _, q := range []string{res.Schedule, res.Fetch, res.Parse} {
		v, nv, err := be.Queue.Depth(ctx, q)
		if err != nil {
			fmt.Fprintf(stderr, "crawl: %v\n", err)
			return sum, ExitFailed
		}
		queued += v + nv
	}
	var unfinished []string
	for id, c := range before {
		if c.Pending() > 0 {
			unfinished = append(unfinished, id)
		}
	}
	if queued == 0 && len(unfinished) == 0 {
		fmt.Fprintf(stderr, "crawl: nothing to go on with in %s: no message is queued and every crawl there has ended;"+
			" give a SEEDFILE to start one (or --fresh with it to crawl it again)\n", o.State)
		return sum, ExitOK
	}
	note := fmt.Sprintf("crawl: going on with what %s holds: %d queued messages", o.State, queued)
	if len(unfinished) > 0 {
		note += "; unfinished crawls: " + strings.Join(unfinished, ", ")
	}
	fmt.Fprintln(stderr, note)
	runner := NewRunner(be.Queue, res, h, o.Concurrency, o.Visibility, log)
	runner.IdleCheck = be.IdleCheck
	start := time.Now()
	stopCounters := holdCounters(ctx, h.State, counterInterval, log)
	work, released := graceful(ctx, o.StopGrace, stderr)
	runErr := runner.RunGraceful(ctx, work)
	released()
	releaseBudgets(ctx, h.State, log)
	stopCounters()
	wctx := context.WithoutCancel(ctx)
	after, err := countsOnRecord(wctx, h.State)
	if err != nil {
		fmt.Fprintf(stderr, "crawl: summary: %v\n", err)
		return sum, ExitFailed
	}
	for id, c := range after {
		if tallyOf(c) == tallyOf(before[id]) && before[id].Pending() == 0 {
			continue
		}
		a, err := summarize(wctx, h.State, be, res, id, start, Summary{Crawl: id, fetchedBefore: before[id].Fetched, prices: sum.prices}, false)
		if err != nil {
			fmt.Fprintf(stderr, "crawl: summary of %s: %v\n", id, err)
			continue
		}
		a.Finished = runErr == nil && a.Pending == 0
		sum.Also = append(sum.Also, a)
		sum.FetchedThisRun += a.FetchedThisRun
	}
	sum.ElapsedSeconds = time.Since(start).Seconds()
	sum.Finished = runErr == nil
	announced := announceEnd(wctx, h, be, &sum, stderr)
	printSummary(stdout, stderr, sum, o.JSON, hintsOf(o))
	switch {
	case errors.Is(runErr, context.Canceled):
		fmt.Fprintf(stderr, "crawl: interrupted: what was done is saved in %s%s; run the same command again to go on\n", o.State,
			cutShortNote(runner.Stats.CutShort.Load()))
		return sum, ExitInterrupted
	case runErr != nil:
		fmt.Fprintf(stderr, "crawl: %v\n", runErr)
		return sum, ExitFailed
	case !announced:
		return sum, ExitFailed
	}
	return sum, ExitOK
}
