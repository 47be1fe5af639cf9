package e2etest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/crawlstack/crawlstack/shared/app/pipeline"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/finish"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// The end of a crawl, announced once (package finish), with every message delivered twice and
// faults at named steps of the last messages.

// Announcer is a finish.Publisher that keeps the events put, and fails the first put when
// FailFirst is set: a crash after the end is decided, before its event is put.
type Announcer struct {
	FailFirst bool
	// OnPut, if set, is called with each event as it is put (after FailFirst's failure).
	OnPut func(finish.Event)

	mu    sync.Mutex
	calls int
	put   []finish.Event
}

var _ finish.Publisher = (*Announcer)(nil)

// errCrash is the error of an injected crash.
var errCrash = errors.New("injected crash")

// Publish keeps e, or fails the first call when FailFirst is set.
func (a *Announcer) Publish(_ context.Context, e finish.Event) error {
	a.mu.Lock()
	a.calls++
	fail := a.FailFirst && a.calls == 1
	a.mu.Unlock()
	if fail {
		return errCrash
	}
	if a.OnPut != nil {
		a.OnPut(e)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.put = append(a.put, e)
	return nil
}

// Put returns the events put, and how many puts were asked for (failed ones too).
func (a *Announcer) Put() ([]finish.Event, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]finish.Event(nil), a.put...), a.calls
}

// endFaults is a table that fails, once each, the first write of every parse message's mark
// ("before a parse message is marked done": every parse message is delivered again, the crawl's
// last one too) and, when failMark is set, the first write that marks a crawl's end announced
// ("after the event is put, before its end is marked announced").
type endFaults struct {
	table.Table
	failMark bool

	mu     sync.Mutex
	marked map[table.Key]bool // parse marks failed once
	failed bool               // the announced mark failed once
}

func (t *endFaults) Put(ctx context.Context, key table.Key, it table.Item, cond table.Cond) error {
	if isParseMark(key) {
		t.mu.Lock()
		first := !t.marked[key]
		if t.marked == nil {
			t.marked = map[table.Key]bool{}
		}
		t.marked[key] = true
		t.mu.Unlock()
		if first {
			return errCrash
		}
	}
	return t.Table.Put(ctx, key, it, cond)
}

// isParseMark reports whether key is a parse message's mark, sorted as m#<hex digest>, not one of
// the Links messages' items that share its kind (crawlstate's links.go).
func isParseMark(key table.Key) bool {
	rest, ok := strings.CutPrefix(key.Sort, "m#")
	return ok && crawlstate.KindOf(key) == "parsed" && rest != "" && strings.ContainsRune("0123456789abcdef", rune(rest[0]))
}

func (t *endFaults) Update(ctx context.Context, key table.Key, u table.Update, cond table.Cond) (table.Item, error) {
	if t.failMark && u.Set["end"] == string(crawlstate.EndAnnounced) {
		t.mu.Lock()
		first := !t.failed
		t.failed = true
		t.mu.Unlock()
		if first {
			return nil, errCrash
		}
	}
	return t.Table.Update(ctx, key, u, cond)
}

// endConfig is the harness's configuration with drain checks every 50 ms, and the counters quiet
// for twice the runner's visibility (as the stack waits longer than the schedule queue's): a Links
// message whose batch failed comes back within it.
func (h *Harness) endConfig() pipeline.Config {
	cfg := h.Config()
	vis := h.Visibility
	if vis <= 0 {
		vis = time.Second
	}
	cfg.FinishEvery, cfg.FinishQuiet = 50*time.Millisecond, 2*vis
	return cfg
}

// CheckEndAnnouncedOnce crawls the site with its end announced by drain checks, every message
// delivered twice (the checks too), every parse message failing once before it is marked done
// (so the crawl's last message is delivered again), and the first put of the end event failing
// after the end is decided. The end is announced exactly once, with the crawl's exact counts,
// only once every page was fetched and recorded, and the run ends with it.
func (h *Harness) CheckEndAnnouncedOnce(concurrency int) {
	t := h.T
	t.Helper()
	cfg := h.endConfig()
	ports := h.Ports()
	ports.Queue = Doubler{h.Queue}
	ports.Table = &endFaults{Table: h.Table}
	var crawl string
	var servedAtPut, recordsAtPut int
	ann := &Announcer{FailFirst: true, OnPut: func(finish.Event) {
		servedAtPut, recordsAtPut = h.Site.Fetched(), len(h.Records(crawl))
	}}
	ports.Events = ann
	ctx := context.Background()
	crawl, err := h.Start(ctx, h.Res, "seeds.txt", []byte(h.Site.URL+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Run(ctx, crawl, cfg, ports, h.Queue, concurrency); err != nil {
		t.Fatal(err)
	}
	h.CheckNothingLost(crawl)
	put, calls := ann.Put()
	if len(put) != 1 || calls != 2 {
		t.Fatalf("%d events put in %d calls, want 1 put in 2 calls (the first failed after the end was decided)", len(put), calls)
	}
	e := put[0]
	if e.EventID != finish.EventID(crawl) || e.Crawl != crawl || e.End != finish.EndDrained {
		t.Errorf("event id %q, crawl %q, end %q: want %q, %q, %q", e.EventID, e.Crawl, e.End, finish.EventID(crawl), crawl, finish.EndDrained)
	}
	if e.Counts.Fetched != int64(h.Site.Pages) || e.Counts.Failed != 0 || e.Counts.Seen < int64(h.Site.Pages) {
		t.Errorf("event counts %+v: want %d fetched (the site's pages), none failed", e.Counts, h.Site.Pages)
	}
	if servedAtPut != h.Site.Pages || recordsAtPut != h.Site.Pages {
		t.Errorf("when the event was put the site had served %d pages and %d had records, want all %d", servedAtPut, recordsAtPut, h.Site.Pages)
	}
	ch, err := crawlstate.New(h.Table).ChecksOf(ctx, crawl)
	if err != nil {
		t.Fatal(err)
	}
	if ch.End != crawlstate.EndAnnounced {
		t.Errorf("the crawl item's end is %q, want %q", ch.End, crawlstate.EndAnnounced)
	}
	// The end comes from the counters at the first check after the last page, which may be the
	// chain's first (a check every 50 ms, the crawl's pages done within the first): every check is
	// delivered twice, and the copy finds the chain moved on.
	if ch.Seq < 1 {
		t.Errorf("the chain of checks reached seq %d: want at least one step, copies dropped", ch.Seq)
	}
	// The end came from the end's counters (a check tallies only once they show nothing left):
	// with every message delivered twice they still count each page stored and each Links message
	// named once. A page may count parsed twice: a duplicate fetch message that finds its page
	// fetched and not yet parsed sends it again in a one-page parse message, and both marks count
	// it; and a Links message admitted twice: its two copies in two schedule batches each write an
	// admitted mark (crawlstate/endcount.go). A count high by such pages or messages only brings a
	// tally on. (CI saw 19 admitted for 18 named under load, once.)
	n, err := crawlstate.New(h.Table).Counters(ctx, crawl)
	if err != nil {
		t.Fatal(err)
	}
	if !ch.Counted || !n.Left().Done() || n.Pages != int64(h.Site.Pages) || n.PagesParsed < n.Pages || n.LinksAdmitted < n.LinksNamed {
		t.Errorf("the end's counters (counted %v): %d pages stored, %d parsed, %d Links messages named, %d admitted; want %d pages, all parsed, all admitted",
			ch.Counted, n.Pages, n.PagesParsed, n.LinksNamed, n.LinksAdmitted, h.Site.Pages)
	}
}

// CheckEndPutAgainAfterCrashBeforeMark crawls the site with the first mark of the end as announced
// failing, after its event was put: the check is delivered again and puts the same event again.
// EventBridge has no deduplication, so this is the one way an end is put twice; both copies carry
// the same EventID and detail, for a consumer to drop the second.
func (h *Harness) CheckEndPutAgainAfterCrashBeforeMark(concurrency int) {
	t := h.T
	t.Helper()
	cfg := h.endConfig()
	ports := h.Ports()
	ports.Table = &endFaults{Table: h.Table, failMark: true}
	ann := &Announcer{}
	ports.Events = ann
	crawl, err := h.Crawl(context.Background(), cfg, ports, h.Queue, concurrency)
	if err != nil {
		t.Fatal(err)
	}
	h.CheckNothingLost(crawl)
	put, calls := ann.Put()
	if len(put) != 2 || calls != 2 {
		t.Fatalf("%d events put in %d calls, want the same event put twice", len(put), calls)
	}
	if put[0].EventID != finish.EventID(crawl) || !put[0].FinishedAt.Equal(put[1].FinishedAt) || put[0].EventID != put[1].EventID ||
		put[0].Counts.Fetched != put[1].Counts.Fetched || put[0].Counts.Fetched != int64(h.Site.Pages) {
		t.Errorf("the two puts differ, or miss pages: %+v and %+v", put[0], put[1])
	}
}
