package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/handler/scheduler"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// A seed file's crawls come in generations: the first is named after the file's content, and
// each `--fresh` start of a crawl that has ended adds one more (the version "<digest>~2", ...).
// A run continues the newest generation while it is unfinished.

// pick is the crawl a run goes on with, and what to tell its user about that choice.
type pick struct {
	key, version, id string
	// ended is set when the newest crawl has ended and the run starts none: its summary is shown.
	ended bool
	// note is the line the run prints before it starts.
	note string
	// fetched is how many pages the crawl had fetched before this run.
	fetched int64
	// created says that the crawl has no record yet: this run starts it.
	created bool
}

// crawlState is what a crawl's record says: whether it exists, and its counts.
type crawlState struct {
	exists bool
	c      crawlstate.Counters
	// unparsed counts the fetched pages not yet parsed, once exact has looked (0 before).
	unparsed int64
}

// done is whether the crawl has ended: URLs seen, none pending, and (once exact has looked) no
// fetched page waiting to be parsed.
func (s crawlState) done() bool {
	return s.exists && s.c.Seen > 0 && s.c.Pending() == 0 && s.unparsed == 0
}

// readCrawl reads a crawl's record and its counters. Counters may drift by one after a crash, and
// do not count the pages left to parse, so a crawl they say has ended is counted again exactly,
// with those pages (exact); that reads every item of the crawl (its 64 partitions, docs/state.md),
// so it is done only then, at most once per run.
func readCrawl(ctx context.Context, st *crawlstate.Store, id string) (crawlState, error) {
	if _, err := st.CrawlOf(ctx, id); errors.Is(err, table.ErrNotFound) {
		return crawlState{}, nil
	} else if err != nil {
		return crawlState{}, err
	}
	c, err := st.Counters(ctx, id)
	if err != nil {
		return crawlState{}, err
	}
	return crawlState{exists: true, c: c}, nil
}

// exact is s with its counts from a count of the crawl's URL items, and the fetched pages not yet
// parsed among them: a run interrupted after its last fetch leaves their parse messages queued,
// and their links still to come, with no URL pending.
func exact(ctx context.Context, st *crawlstate.Store, id string, s crawlState) (crawlState, error) {
	c, left, err := st.Drained(ctx, id)
	if err != nil {
		return s, fmt.Errorf("count crawl %s: %w", id, err)
	}
	s.c, s.unparsed = c, left.Unparsed
	return s, nil
}

// generation is the version of a seed file's n-th crawl (n from 1).
func generation(version string, n int) string {
	if n == 1 {
		return version
	}
	return version + "~" + strconv.Itoa(n)
}

// chooseCrawl picks the crawl of the seed object key (whose content has this version): the newest
// generation unless it has ended; an ended one is started again when fresh is set, or when it
// fetched nothing (then nothing is lost, and a flag changed since, such as --allow-net, gets its
// chance); otherwise the run only shows it.
func chooseCrawl(ctx context.Context, st *crawlstate.Store, bucket, key, version string, fresh bool) (pick, error) {
	return chooseCrawlOf(ctx, st, nil, bucket, key, version, fresh)
}

// chooseCrawlOf is chooseCrawl, for a URL list when pointers is set: a version of the file with no
// crawl of its own extends the file's last crawl while that has not ended, as schedule does
// (scheduler/extend.go). --fresh starts a crawl of its own instead only once that crawl has ended.
func chooseCrawlOf(ctx context.Context, st *crawlstate.Store, pointers scheduler.PointerReader, bucket, key, version string, fresh bool) (pick, error) {
	n := 1
	var last crawlState
	for ; ; n++ {
		id := scheduler.CrawlID(bucket, key, generation(version, n))
		s, err := readCrawl(ctx, st, id)
		if err != nil {
			return pick{}, err
		}
		if !s.exists {
			break
		}
		last = s
	}
	if n == 1 && pointers != nil {
		if p, ok, err := extending(ctx, st, pointers, bucket, key, version); ok || err != nil {
			return p, err
		}
	}
	if n == 1 {
		id := scheduler.CrawlID(bucket, key, version)
		return pick{key: key, version: version, id: id, note: "new crawl " + id, created: true}, nil
	}
	prev := pick{key: key, version: generation(version, n-1)}
	prev.id = scheduler.CrawlID(bucket, key, prev.version)
	if last.done() {
		var err error
		if last, err = exact(ctx, st, prev.id, last); err != nil {
			return pick{}, err
		}
	}
	if !last.done() {
		prev.note = fmt.Sprintf("resuming crawl %s (%d fetched, %d pending)", prev.id, last.c.Fetched, last.c.Pending()+last.unparsed)
		prev.fetched = last.c.Fetched
		return prev, nil
	}
	next := pick{key: key, version: generation(version, n), created: true}
	next.id = scheduler.CrawlID(bucket, key, next.version)
	switch {
	case fresh:
		next.note = fmt.Sprintf("crawl %s has ended (%d fetched); --fresh starts it again as crawl %s", prev.id, last.c.Fetched, next.id)
		return next, nil
	case last.c.Fetched == 0:
		next.note = fmt.Sprintf("crawl %s ended without fetching a page; starting it again as crawl %s", prev.id, next.id)
		return next, nil
	}
	prev.ended, prev.fetched = true, last.c.Fetched
	prev.note = fmt.Sprintf("crawl %s already ended (%d fetched): nothing to do; its summary follows."+
		" To crawl these seeds again from the start, add --fresh", prev.id, last.c.Fetched)
	return prev, nil
}

// extending is the pick of a URL list's version that extends the file's last crawl: true when that
// crawl is on record, its end not decided, and it was not stopped.
func extending(ctx context.Context, st *crawlstate.Store, pointers scheduler.PointerReader, bucket, key, version string) (pick, bool, error) {
	last, err := scheduler.LastCrawl(ctx, pointers, key)
	if err != nil || last == "" || last == scheduler.CrawlID(bucket, key, version) {
		return pick{}, false, err
	}
	ch, err := st.ChecksOf(ctx, last)
	if errors.Is(err, table.ErrNotFound) {
		return pick{}, false, nil
	} else if err != nil {
		return pick{}, false, err
	}
	if ch.End != "" || ch.Run == crawlstate.StoppedBy {
		return pick{}, false, nil // as schedule decides (crawlstate.Runs.BeginExtension)
	}
	s, err := readCrawl(ctx, st, last)
	if err != nil {
		return pick{}, false, err
	}
	return pick{key: key, version: version, id: last, fetched: s.c.Fetched,
		note: fmt.Sprintf("the seed file changed while crawl %s had not ended (%d fetched, %d pending): "+
			"the crawl takes in its new lines, and fetches no page again", last, s.c.Fetched, s.c.Pending())}, true, nil
}

// unfinishedOthers lists the crawls on record other than id that have URLs pending, with the pages
// each has fetched so far: their messages wait in the same queues, so a run advances them too. It
// reads every crawl's counters, so a run asks only on the embedded backend, where they are local.
func unfinishedOthers(ctx context.Context, st *crawlstate.Store, id string) ([]Summary, error) {
	all, err := st.Crawls(ctx)
	if err != nil {
		return nil, err
	}
	var out []Summary
	for _, c := range all {
		if c.ID == id {
			continue
		}
		n, err := st.Counters(ctx, c.ID)
		if err != nil {
			return nil, err
		}
		if n.Pending() > 0 {
			out = append(out, Summary{Crawl: c.ID, fetchedBefore: n.Fetched})
		}
	}
	return out, nil
}
