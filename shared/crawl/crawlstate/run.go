package crawlstate

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// Run is what the crawl's user asked of it: to run (the default), to pause, or to stop. It is kept
// on the crawl item, where `crawl pause | resume | stop` writes it and the handlers read it (RunOf).
type Run string

// The run states. A stop is final: a stopped crawl is neither paused nor resumed again.
const (
	Running   Run = "running"
	Paused    Run = "paused"
	StoppedBy Run = "stopped"
)

// StopUser is the reason recorded on a crawl that its user stopped (Counters.Stopped).
const StopUser = "user"

// ErrStopped is a stopped crawl's answer to a pause or a resume.
var ErrStopped = errors.New("the crawl is stopped, for good")

// ErrUnknownCrawl is SetRun's answer for a crawl with no record in the table.
var ErrUnknownCrawl = errors.New("no such crawl")

// ErrCrawlStopped is the cause recorded on a URL that its stopped crawl never fetched, and on a
// link it did not admit.
var ErrCrawlStopped = errclass.Errorf(errclass.Stopped, "the crawl was stopped")

// Attributes of the crawl item.
const (
	attrRun   = "run"
	attrRunAt = "runAt"
)

// DefaultRunCheck is how long a store keeps a crawl's run state once read: a pause, a resume or a
// stop reaches every handler within that time, for one strongly consistent read of the crawl item
// per crawl, process and period (a read unit; about $0.0001 a day per warm Lambda container).
const DefaultRunCheck = 5 * time.Second

// runSeen is a crawl's run state as a store last read it.
type runSeen struct {
	mu  sync.Mutex
	at  time.Time
	run Run
}

// RunOf returns the crawl's run state, read from the crawl item at most once per the interval of
// WithRunCheck (DefaultRunCheck when 0; every time when negative). A stop, once seen, is kept: it
// is final.
// A crawl with no record runs.
func (s *Runs) RunOf(ctx context.Context, crawl string) (Run, error) {
	v, _ := s.runs.LoadOrStore(crawl, &runSeen{})
	rs := v.(*runSeen)
	rs.mu.Lock()
	defer rs.mu.Unlock()
	every := s.runCheck
	if every == 0 {
		every = DefaultRunCheck
	}
	now := s.now()
	if rs.run == StoppedBy || (!rs.at.IsZero() && every > 0 && now.Sub(rs.at) < every) {
		return rs.run, nil
	}
	it, err := s.t.Get(ctx, CrawlKey(crawl))
	switch {
	case errors.Is(err, table.ErrNotFound):
		it = table.Item{}
	case err != nil:
		return Running, fmt.Errorf("read the run state of crawl %s: %w", crawl, err)
	}
	rs.at, rs.run = now, runFrom(it)
	return rs.run, nil
}

func runFrom(it table.Item) Run {
	if r := Run(it.String(attrRun)); r == Paused || r == StoppedBy {
		return r
	}
	return Running
}

// SetRun records that the crawl is to run, pause or stop. It returns ErrUnknownCrawl for a crawl
// with no record, and ErrStopped when a stopped crawl is asked to run or pause. A stop also
// records StopUser as why the crawl stopped admitting URLs, unless a reason is recorded already.
func (s *Runs) SetRun(ctx context.Context, crawl string, to Run) error {
	if to != Running && to != Paused && to != StoppedBy {
		return fmt.Errorf("run state %q: want running, paused or stopped", to)
	}
	cond := table.And(table.ItemExists(), table.Ne(attrRun, string(StoppedBy)))
	if to == StoppedBy {
		cond = table.ItemExists()
	}
	_, err := s.t.Update(ctx, CrawlKey(crawl), table.Update{Set: map[string]any{
		attrRun: string(to), attrRunAt: s.now().UnixMilli(),
	}}, cond)
	if cf, failed := table.IsConditionFailed(err); failed {
		if len(cf.Item) == 0 {
			return fmt.Errorf("crawl %s: %w", crawl, ErrUnknownCrawl)
		}
		return fmt.Errorf("crawl %s: %w", crawl, ErrStopped)
	}
	if err != nil {
		return fmt.Errorf("set crawl %s %s: %w", crawl, to, err)
	}
	s.runs.Delete(crawl) // this store sees its own change at once
	if to == StoppedBy {
		return s.markStopped(ctx, crawl, StopUser)
	}
	return nil
}

// counterStopRefused counts the links a stopped crawl did not admit (Counters.StopRefused).
const counterStopRefused = "stop_refused"

// CountStopRefusal counts a link that a stopped crawl did not admit; like a budget refusal it is
// counted, not recorded on an item. It is not counted in the class stopped, which counts the URLs
// that ended stopped: the two numbers a person reads of a stop are the URLs and the links.
func (s *Runs) CountStopRefusal(ctx context.Context, crawl string) error {
	return s.count(ctx, crawl, map[string]int64{counterStopRefused: 1})
}

// Crawl is what the crawl item records of a crawl.
type Crawl struct {
	ID      string
	Started time.Time // zero when no start is on record
	Run     Run
	// RunAt is when the run state was last set (zero when never).
	RunAt time.Time
	// Stopped is why the crawl stopped admitting URLs, if it did (StopBudget, StopUser).
	Stopped string
	// Stall is whether its drain checks found it stalled and stopped (StallPending, or
	// StallAnnounced once its event was sent; none when it is not: finish.go).
	Stall End
	// End is whether its end is decided (EndPending, or EndAnnounced once its event was sent;
	// none while it runs: finish.go).
	End End
}

// CrawlOf reads the crawl item; it returns table.ErrNotFound (wrapped) for an unknown crawl.
func (s *Runs) CrawlOf(ctx context.Context, crawl string) (Crawl, error) {
	it, err := s.t.Get(ctx, CrawlKey(crawl))
	if err != nil {
		return Crawl{}, fmt.Errorf("read crawl %s: %w", crawl, err)
	}
	return crawlFrom(crawl, it), nil
}

func crawlFrom(id string, it table.Item) Crawl {
	c := Crawl{ID: id, Run: runFrom(it), Stopped: it.String(attrStopped), Stall: End(it.String(attrStall)), End: End(it.String(attrEnd))}
	if it.Has(attrStarted) {
		c.Started = time.UnixMilli(it.Int(attrStarted))
	}
	if it.Has(attrRunAt) {
		c.RunAt = time.UnixMilli(it.Int(attrRunAt))
	}
	return c
}

// Crawls lists the crawls on record, newest start first. It queries the CrawlShards partitions
// of the crawl items, which hold nothing else: a read unit per 4 KB of crawl items.
func (s *Runs) Crawls(ctx context.Context) ([]Crawl, error) {
	var out []Crawl
	err := eachInParts(ctx, s.t, CrawlShards, crawlListPart, "", func(id string, it table.Item) error {
		out = append(out, crawlFrom(id, it))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list the crawls: %w", err)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Started.Equal(out[j].Started) {
			return out[i].Started.After(out[j].Started)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}
