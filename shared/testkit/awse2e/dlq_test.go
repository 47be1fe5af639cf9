package awse2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/app/cli"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/port/table"
	"github.com/crawlstack/crawlstack/shared/testkit/awstest"
)

// countedSite is a one-page site on its own loopback port (so its own host for politeness) whose
// robots.txt asks for a Crawl-delay, which makes the fetcher take the host's politeness slot in
// the table before every request. It counts the requests for each path.
type countedSite struct {
	url  string
	mu   sync.Mutex
	hits map[string]int
}

func newCountedSite(t *testing.T) *countedSite {
	t.Helper()
	s := &countedSite{hits: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		s.mu.Unlock()
		switch r.URL.Path {
		case "/robots.txt":
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "User-agent: *\nCrawl-delay: 1\n")
		case "/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, "<!doctype html><html><head><title>slow host</title></head><body><p>one page</p></body></html>")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL + "/"
	return s
}

func (s *countedSite) Hits(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

// errOutage is a transient table failure, such as DynamoDB throttling one hot item.
var errOutage = errors.New("injected outage: ProvisionedThroughputExceededException")

// slotOutage fails every write to one host's politeness slot while on: the cause of the poison.
type slotOutage struct {
	table.Table
	host     string
	on       atomic.Bool
	failures atomic.Int64
}

func (s *slotOutage) Update(ctx context.Context, key table.Key, u table.Update, cond table.Cond) (table.Item, error) {
	if s.on.Load() && crawlstate.KindOf(key) == "slot" && key.Sort == s.host {
		s.failures.Add(1)
		return nil, errOutage
	}
	return s.Table.Update(ctx, key, u, cond)
}

// TestIntegrationPoisonReachesTheDLQAndRedrives makes one fetch message fail on every receive
// (the table fails its host's politeness slot), and proves the way out of SQS's dead-letter
// queue: after maxReceiveCount receives the URL is recorded failed and its message is in the
// fetch DLQ while the rest of the crawl finishes; once the cause is fixed, `crawl redrive
// --backend aws fetch` moves it back, and the crawl run again fetches that URL once and no
// other page twice.
func TestIntegrationPoisonReachesTheDLQAndRedrives(t *testing.T) {
	const maxReceive = 2
	h := newHarness(t, 20, 4)
	h.setup(cli.QueueSettings{Visibility: 2 * time.Second, MaxReceiveCount: maxReceive})
	slow := newCountedSite(t)
	su, err := url.Parse(slow.url)
	if err != nil {
		t.Fatal(err)
	}
	// The politeness slot's key, as crawlstate documents it: sorted by its host in a slot partition.
	outage := &slotOutage{Table: h.be.Table, host: su.Host}
	outage.on.Store(true)
	ports := h.Ports()
	ports.Table = outage
	ctx := context.Background()
	crawl, err := h.Crawl(ctx, h.Config(), ports, h.Queue, 8, h.Site.URL, slow.url)
	if err != nil {
		t.Fatal(err)
	}

	norm, err := urlnorm.Normalize(slow.url)
	if err != nil {
		t.Fatal(err)
	}
	key := urlnorm.Key(norm.String())
	st := crawlstate.New(h.be.Table)
	u, err := st.Get(ctx, crawl, key)
	if err != nil {
		t.Fatal(err)
	}
	if u.State != crawlstate.Failed || u.Class != errclass.Internal || !strings.Contains(u.Detail, "ProvisionedThroughputExceeded") {
		t.Errorf("the poisoned URL is %s (class %q, %q), want failed with class %q and its cause",
			u.State, u.Class, u.Detail, errclass.Internal)
	}
	// The two seeds' URLs went out in one fetch message: the poisoned one failed there first, was
	// sent back alone, and failed once per receive of its own message.
	if n := outage.failures.Load(); n != maxReceive+1 {
		t.Errorf("the slot failed %d times, want once in the seeds' message and once per receive (%d) of its own", n, maxReceive)
	}
	h.CheckDLQs(map[string]int{"fetch": 1})
	if n := slow.Hits("/"); n != 0 {
		t.Errorf("the poisoned page was fetched %d times while its slot failed", n)
	}
	h.CheckSite() // the rest of the crawl went on
	c, err := st.Tally(ctx, crawl)
	if err != nil {
		t.Fatal(err)
	}
	if c.Failed != 1 || c.Fetched != int64(h.Site.Pages) || c.Pending() != 0 {
		t.Errorf("after the first run: %+v, want %d fetched and 1 failed", c, h.Site.Pages)
	}

	// Fix the cause, then redrive as a user would.
	outage.on.Store(false)
	if awstest.Emulators() {
		// gofakes3 answers CreateBucket of an existing bucket with 409 BucketAlreadyExists, so
		// the command's set-up would fail: name the queues as a deployed stack's outputs do.
		h.queueEnv()
	}
	h.setenv()
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if code := cli.Main(rctx, []string{"redrive", "--backend", "aws", "fetch"}, &stdout, &stderr); code != cli.ExitOK {
		t.Fatalf("crawl redrive --backend aws fetch: exit %d\n%s%s", code, &stdout, &stderr)
	}
	if out := stdout.String(); !strings.Contains(out, "moved 1 messages") && !strings.Contains(out, "started moving") {
		t.Errorf("crawl redrive said %q, want it to move 1 message", out)
	}
	h.CheckDLQs(map[string]int{})

	again, err := h.Crawl(ctx, h.Config(), h.Ports(), h.Queue, 8, h.Site.URL, slow.url)
	if err != nil {
		t.Fatal(err)
	}
	if again != crawl {
		t.Fatalf("the same seed file started crawl %s, then %s", crawl, again)
	}
	if n := slow.Hits("/"); n != 1 {
		t.Errorf("after the redrive the page was fetched %d times, want once", n)
	}
	if u, err := st.Get(ctx, crawl, key); err != nil || u.State != crawlstate.Fetched {
		t.Errorf("after the redrive the URL is %s (err %v), want fetched", u.State, err)
	}
	if r := h.Site.Repeats(); len(r) != 0 {
		t.Errorf("pages fetched more than once: %v", r)
	}
	for name, c := range map[string]func(context.Context, string) (crawlstate.Counters, error){
		"items": st.Tally, "live counters": st.Counters,
	} {
		got, err := c(ctx, crawl)
		if err != nil {
			t.Fatal(err)
		}
		if got.Failed != 0 || got.Fetched != int64(h.Site.Pages)+1 || got.Pending() != 0 {
			t.Errorf("%s after the redrive: %+v, want %d fetched, none failed or pending", name, got, h.Site.Pages+1)
		}
	}
	if !h.Records(crawl)[slow.url] {
		t.Errorf("no record for the redriven page %s", slow.url)
	}
	h.CheckRecords(crawl)
	h.CheckDLQs(map[string]int{})
}
