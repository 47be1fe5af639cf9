package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/functions/parse/parser"
	"github.com/crawlstack/crawlstack/shared/blob"
	"github.com/crawlstack/crawlstack/shared/crawlstate"
	"github.com/crawlstack/crawlstack/shared/demosite"
	"github.com/crawlstack/crawlstack/shared/localrun"
	"github.com/crawlstack/crawlstack/shared/pipeline"
	"github.com/crawlstack/crawlstack/shared/queue"
	"github.com/crawlstack/crawlstack/shared/table"
)

// harness is a loopback demo site and an embedded backend in a temp dir.
type harness struct {
	t    *testing.T
	be   *Backend
	res  Resources
	site *demosite.Site
	url  string
	// times records when each page request arrived, for the politeness test.
	mu    sync.Mutex
	times []time.Time
}

func newHarness(t *testing.T, pages, links int, visibility time.Duration) *harness {
	t.Helper()
	h := &harness{t: t, site: demosite.New(pages, links, 2000)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/robots.txt" {
			h.mu.Lock()
			h.times = append(h.times, time.Now())
			h.mu.Unlock()
		}
		h.site.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	h.url = srv.URL + "/"
	be, err := OpenEmbedded(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	h.be = be
	h.res, err = be.Setup(context.Background(), QueueSettings{Visibility: visibility, MaxReceiveCount: 5})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *harness) config() pipeline.Config {
	c := pipeline.DefaultConfig()
	c.ScheduleQueue, c.FetchQueue, c.ParseQueue = h.res.Schedule, h.res.Fetch, h.res.Parse
	c.AllowNets = []string{"127.0.0.0/8"}
	c.HostRPS, c.HostConcurrency = 0, 0
	return c
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// crawl runs a crawl of the site over ports (possibly wrapped) until the pipeline is empty or
// ctx ends, and returns the crawl id and the runner's error.
func (h *harness) crawl(ctx context.Context, cfg pipeline.Config, ports pipeline.Ports, q localrun.Queues, concurrency int) (string, error) {
	h.t.Helper()
	hs, err := pipeline.New(cfg, ports, quietLog())
	if err != nil {
		h.t.Fatal(err)
	}
	defer hs.Close()
	crawl, err := StartCrawl(ctx, h.be, h.res, "seeds.txt", []byte(h.url+"\n"))
	if err != nil {
		h.t.Fatal(err)
	}
	r := NewRunner(q, h.res, hs, concurrency, 0, quietLog())
	return crawl, r.Run(ctx)
}

func (h *harness) ports() pipeline.Ports {
	return pipeline.Ports{Queue: h.be.Queue, Table: h.be.Table, Blobs: h.be.Blobs}
}

// checkNothingLost proves invariant 1: every admitted URL is in exactly one terminal state,
// every page of the site was fetched and has a record, and no dead-letter queue holds anything.
func (h *harness) checkNothingLost(crawl string) {
	h.checkInvariants(crawl, true)
}

// checkInvariants is checkNothingLost; exactCounters also holds the live counters to the items
// (they may drift by one per crash, which is why summaries use Tally).
func (h *harness) checkInvariants(crawl string, exactCounters bool) {
	t := h.t
	t.Helper()
	ctx := context.Background()
	st := crawlstate.New(h.be.Table)
	c, err := st.Tally(ctx, crawl)
	if err != nil {
		t.Fatal(err)
	}
	if c.Pending() != 0 || c.Fetched != int64(h.site.Pages) || c.Failed != 0 {
		t.Errorf("counters = %+v: want %d fetched, none pending or failed", c, h.site.Pages)
	}
	states := map[crawlstate.State]int{}
	if err := st.ScanURLs(ctx, crawl, func(u crawlstate.URL) error {
		if !u.State.Terminal() {
			t.Errorf("url %s is still %s", u.URL, u.State)
		}
		states[u.State]++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if states[crawlstate.Fetched] != h.site.Pages {
		t.Errorf("items by state = %v, want %d fetched", states, h.site.Pages)
	}
	if exactCounters {
		live, err := st.Counters(ctx, crawl)
		if err != nil {
			t.Fatal(err)
		}
		if live.Seen != c.Seen || live.Fetched != c.Fetched || live.Skipped != c.Skipped || live.Failed != c.Failed {
			t.Errorf("live counters %+v differ from the items %+v", live, c)
		}
	}
	if got := h.site.Fetched(); got != h.site.Pages {
		t.Errorf("the site served %d distinct pages, want %d", got, h.site.Pages)
	}
	if n := h.site.Hits("/private/secret") + h.site.Hits("/p/nofollow-never-fetched"); n != 0 {
		t.Errorf("fetched a robots-disallowed or nofollow page %d times", n)
	}
	recs := h.records(crawl)
	for i := 0; i < h.site.Pages; i++ {
		if !recs[h.url[:len(h.url)-1]+demosite.Path(i)] {
			t.Errorf("no record for page %d", i)
			break
		}
	}
	for name, q := range map[string]string{"schedule": h.res.ScheduleDLQ, "fetch": h.res.FetchDLQ, "parse": h.res.ParseDLQ} {
		if v, nv, err := h.be.Queue.Depth(ctx, q); err != nil || v+nv != 0 {
			t.Errorf("%s dead-letter queue holds %d messages (err %v)", name, v+nv, err)
		}
	}
}

// records returns the URLs that have a record in records/.
func (h *harness) records(crawl string) map[string]bool {
	h.t.Helper()
	ctx := context.Background()
	keys, err := h.be.Blobs.List(ctx, parser.RecordsPrefix+crawl+"/")
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]bool{}
	for _, k := range keys {
		b, err := h.be.Blobs.Get(ctx, k)
		if err != nil {
			h.t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var r parser.Record
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				h.t.Fatalf("record in %s: %v", k, err)
			}
			out[r.URL] = true
		}
	}
	return out
}

func TestCrawlFetchesEveryPageOnce(t *testing.T) {
	h := newHarness(t, 150, 8, 30*time.Second)
	crawl, err := h.crawl(context.Background(), h.config(), h.ports(), h.be.Queue, 16)
	if err != nil {
		t.Fatal(err)
	}
	h.checkNothingLost(crawl)
	if r := h.site.Repeats(); len(r) != 0 {
		t.Errorf("pages fetched more than once: %v", r)
	}
	// Running the same crawl again (the same seed file) fetches nothing new.
	before := h.site.Fetched()
	if _, err := h.crawl(context.Background(), h.config(), h.ports(), h.be.Queue, 16); err != nil {
		t.Fatal(err)
	}
	if r := h.site.Repeats(); len(r) != 0 || h.site.Fetched() != before {
		t.Errorf("a second run of the same crawl fetched again: %v", r)
	}
}

// doubler delivers every message twice: SQS's at-least-once delivery, at its worst.
type doubler struct{ queue.Sender }

func (d doubler) SendBatch(ctx context.Context, q string, entries []queue.Entry) error {
	twice := make([]queue.Entry, 0, 2*len(entries))
	for _, e := range entries {
		twice = append(twice, e, queue.Entry{ID: e.ID + "-dup", Body: e.Body, Delay: e.Delay})
	}
	return d.Sender.SendBatch(ctx, q, twice)
}

func TestDuplicateDeliveriesFetchOnce(t *testing.T) {
	h := newHarness(t, 120, 6, 30*time.Second)
	ports := h.ports()
	ports.Queue = doubler{h.be.Queue}
	crawl, err := h.crawl(context.Background(), h.config(), ports, h.be.Queue, 24)
	if err != nil {
		t.Fatal(err)
	}
	h.checkNothingLost(crawl)
	if r := h.site.Repeats(); len(r) != 0 {
		t.Errorf("duplicate deliveries fetched pages again: %v", r)
	}
}

var errCrashed = errors.New("crashed")

// crasher counts writes to every backend and, at the limit, "kills the process": every later
// call fails and the run's context is cancelled.
type crasher struct {
	limit  int64
	n      atomic.Int64
	cancel context.CancelFunc
}

func (c *crasher) step() error {
	if c.n.Add(1) > c.limit {
		c.cancel()
		return errCrashed
	}
	return nil
}

type crashQueue struct {
	c *crasher
	localrun.Queues
	queue.Sender
}

func (q crashQueue) SendBatch(ctx context.Context, name string, e []queue.Entry) error {
	if err := q.c.step(); err != nil {
		return err
	}
	return q.Sender.SendBatch(ctx, name, e)
}

func (q crashQueue) Delete(ctx context.Context, name, receipt string) error {
	if err := q.c.step(); err != nil {
		return err
	}
	return q.Queues.Delete(ctx, name, receipt)
}

type crashTable struct {
	c *crasher
	table.Table
}

func (t crashTable) Put(ctx context.Context, key string, it table.Item, cond table.Cond) error {
	if err := t.c.step(); err != nil {
		return err
	}
	return t.Table.Put(ctx, key, it, cond)
}

func (t crashTable) Update(ctx context.Context, key string, u table.Update, cond table.Cond) (table.Item, error) {
	if err := t.c.step(); err != nil {
		return nil, err
	}
	return t.Table.Update(ctx, key, u, cond)
}

type crashBlobs struct {
	c *crasher
	blob.Store
}

func (b crashBlobs) Put(ctx context.Context, key string, body []byte, ct string) error {
	if err := b.c.step(); err != nil {
		return err
	}
	return b.Store.Put(ctx, key, body, ct)
}

func TestCrashBetweenAnyStepsLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("crash matrix: several crawls")
	}
	// Each limit kills the crawl at a different write: inside admission, between a claim and its
	// fetch, between a WARC write and its parse message, between a handler's success and the delete.
	for _, limit := range []int64{3, 17, 60, 140, 260, 420} {
		t.Run("after_"+strconv.FormatInt(limit, 10)+"_writes", func(t *testing.T) {
			const concurrency = 8
			h := newHarness(t, 60, 5, time.Second)
			ctx, cancel := context.WithCancel(context.Background())
			c := &crasher{limit: limit, cancel: cancel}
			cq := crashQueue{c: c, Queues: h.be.Queue, Sender: h.be.Queue}
			ports := pipeline.Ports{Queue: cq, Table: crashTable{c, h.be.Table}, Blobs: crashBlobs{c, h.be.Blobs}}
			if _, err := h.crawl(ctx, h.config(), ports, cq, concurrency); !errors.Is(err, context.Canceled) {
				t.Fatalf("the crashing run ended with %v, want a crash", err)
			}
			// Resume: a new process (fresh handlers, a cold Bloom filter) on the same state.
			crawl, err := h.crawl(context.Background(), h.config(), h.ports(), h.be.Queue, concurrency)
			if err != nil {
				t.Fatal(err)
			}
			h.checkInvariants(crawl, false)
			// Only a page whose GET was under way at the crash may be fetched twice.
			if r := h.site.Repeats(); len(r) > concurrency {
				t.Errorf("%d pages fetched twice, more than the %d in flight at the crash: %v", len(r), concurrency, r)
			}
		})
	}
}

func TestPolitenessIsSharedByAllWorkers(t *testing.T) {
	h := newHarness(t, 12, 4, 30*time.Second)
	cfg := h.config()
	cfg.HostRPS = 10 // one request per 100 ms, whatever the concurrency
	cfg.MaxReceive = 2
	crawl, err := h.crawl(context.Background(), cfg, h.ports(), h.be.Queue, 16)
	if err != nil {
		t.Fatal(err)
	}
	h.checkNothingLost(crawl) // also: waiting put nothing in the DLQ, though maxReceiveCount is 2
	h.mu.Lock()
	defer h.mu.Unlock()
	// The slot is taken at exact times, but requests travel a little after that, so single gaps
	// may shrink under load; no burst may happen, and the whole crawl must keep the rate.
	const interval = 100 * time.Millisecond
	for i := 1; i < len(h.times); i++ {
		if gap := h.times[i].Sub(h.times[i-1]); gap < interval/2 {
			t.Errorf("requests %d and %d were %v apart: a burst, want about %v", i-1, i, gap, interval)
		}
	}
	if n := len(h.times); n > 1 {
		if span, want := h.times[n-1].Sub(h.times[0]), time.Duration(n-1)*interval-interval/2; span < want {
			t.Errorf("%d requests took %v, want at least %v at 10 per second", n, span, want)
		}
	}
}

func TestPoisonIsQuarantinedAndTheCrawlGoesOn(t *testing.T) {
	h := newHarness(t, 30, 4, 30*time.Second)
	ctx := context.Background()
	for _, q := range []string{h.res.Schedule, h.res.Fetch, h.res.Parse} {
		err := h.be.Queue.SendBatch(ctx, q, []queue.Entry{{ID: "a", Body: "{not json"},
			{ID: "b", Body: `{"v":99,"kind":"fetch","crawl":"x"}`}})
		if err != nil {
			t.Fatal(err)
		}
	}
	crawl, err := h.crawl(ctx, h.config(), h.ports(), h.be.Queue, 8)
	if err != nil {
		t.Fatal(err)
	}
	h.checkNothingLost(crawl)
	keys, err := h.be.Blobs.List(ctx, "quarantine/")
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 6 {
		t.Errorf("quarantined %d messages, want 6: %v", len(keys), keys)
	}
	for _, src := range []string{"schedule", "fetch", "parse"} {
		if !strings.Contains(strings.Join(keys, " "), "quarantine/"+src+"/") {
			t.Errorf("nothing quarantined for %s: %v", src, keys)
		}
	}
}
