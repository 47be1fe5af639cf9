package fetcher_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	samples "github.com/crawlstack/crawlstack/events"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/scope"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile/warctest"
	"github.com/crawlstack/crawlstack/shared/crawl/web/httpfetch"
	"github.com/crawlstack/crawlstack/shared/crawl/web/netguard"
	"github.com/crawlstack/crawlstack/shared/crawl/web/robots"
	"github.com/crawlstack/crawlstack/shared/handler/fetcher"
	"github.com/crawlstack/crawlstack/shared/local/fileblob"
	"github.com/crawlstack/crawlstack/shared/local/handoff"
	"github.com/crawlstack/crawlstack/shared/local/sqlite"
	"github.com/crawlstack/crawlstack/shared/port/queue"
	"github.com/crawlstack/crawlstack/shared/port/table"
	"github.com/crawlstack/crawlstack/shared/port/turn"
	"github.com/crawlstack/crawlstack/shared/testkit/embedtest"
)

const (
	fetchQ    = "fetch"
	parseQ    = "parse"
	crawl     = "my-seeds-25f56f7b9ed9" // the crawl of the sample messages
	userAgent = "crawlstack-test/1.0 (+https://example.test/bot)"
	page      = "<!doctype html><html><head><title>T</title></head><body><a href=\"/about\">about</a></body></html>"
)

// site is the loopback web server the samples' example.test URLs are moved to. It counts the
// requests for every path.
type site struct {
	srv  *httptest.Server
	mu   sync.Mutex
	hits map[string]int
	// at is when each path was requested, in order.
	at map[string][]time.Time
	// elsewhere is where /moved-seed redirects to.
	elsewhere string
}

func newSite(t *testing.T) *site {
	s := &site{hits: map[string]int{}, at: map[string][]time.Time{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		s.at[r.URL.Path] = append(s.at[r.URL.Path], time.Now())
		s.mu.Unlock()
		if strings.HasPrefix(r.URL.Path, "/run/") {
			if strings.HasPrefix(r.URL.Path, "/run/slow") {
				<-time.After(slowRunAnswer) // the server's own time to answer: slow enough to throttle its host
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, page)
			return
		}
		switch r.URL.Path {
		case "/robots.txt":
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "User-agent: *\nDisallow: /private/\n")
		case "/", "/about", "/private/page":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, page)
		case "/old":
			http.Redirect(w, r, "/about", http.StatusMovedPermanently)
		case "/away": // to another host: out of a host-scoped crawl
			_, port, _ := net.SplitHostPort(r.Host)
			http.Redirect(w, r, "http://localhost:"+port+"/about", http.StatusFound)
		case "/to-private":
			http.Redirect(w, r, "/private/page", http.StatusFound)
		case "/moved-seed":
			s.mu.Lock()
			to := s.elsewhere
			s.mu.Unlock()
			http.Redirect(w, r, to, http.StatusMovedPermanently)
		case "/busy":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/slow-down":
			w.Header().Set("Retry-After", "3600")
			w.WriteHeader(http.StatusTooManyRequests)
		case "/data.json":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"not":"html"}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *site) hitsOf(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

// delayedSend is a sender to the embedded queue that records the delay of each entry and sends
// it without one, so the test can receive a re-queued message at once and see its receive count.
type delayedSend struct {
	q         *sqlite.Queue
	mu        sync.Mutex
	delays    map[string]time.Duration // body -> requested delay
	sent      map[string]int           // queue -> messages sent to it
	failParse bool                     // fail every send to the parse queue
	failFetch bool                     // fail every send to the fetch queue
}

func (d *delayedSend) SendBatch(ctx context.Context, name string, entries []queue.Entry) error {
	if d.failParse && name == parseQ || d.failFetch && name == fetchQ {
		return errors.New(name + " queue unavailable")
	}
	d.mu.Lock()
	if d.sent == nil {
		d.sent = map[string]int{}
	}
	d.sent[name] += len(entries)
	out := make([]queue.Entry, len(entries))
	for i, e := range entries {
		d.delays[e.Body] = e.Delay
		e.Delay = 0
		out[i] = e
	}
	d.mu.Unlock()
	return d.q.SendBatch(ctx, name, out)
}

// sentTo is how many messages were sent to the queue.
func (d *delayedSend) sentTo(name string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sent[name]
}

// env is the fetch handler on the embedded adapters, a real HTTP client allowed onto loopback,
// and a real robots.txt cache.
type env struct {
	t     *testing.T
	site  *site
	q     *sqlite.Queue
	send  *delayedSend
	blobs *fileblob.Store
	// blobDir is the blob store's root: a WARC file is filepath.Join(blobDir, key).
	blobDir string
	state   *crawlstate.Store
	clock   *testClock               // the state's clock, and the handler's
	urls    *embedtest.CountingTable // the state's table, counting the calls on URL items
	slots   *embedtest.CountingTable // under it, counting the calls on hosts' slot items
	hand    *handoff.Pages           // what the handler offers a parse handler in the same process
	client  *httpfetch.Client        // the handler's HTTP client, for handlers a test builds
	h       *fetcher.Handler
}

// testClock is the time, until a test sets it.
type testClock struct{ at atomic.Pointer[time.Time] }

func (c *testClock) now() time.Time {
	if t := c.at.Load(); t != nil {
		return *t
	}
	return time.Now()
}

func (c *testClock) set(t time.Time) { c.at.Store(&t) }

// newEnv returns the handler with cfg as tune leaves it, on a crawl state with opts.
func newEnv(t *testing.T, tune func(*fetcher.Config), opts ...crawlstate.Option) *env {
	t.Helper()
	be := embedtest.Open(t, fetchQ, parseQ)
	q, blobs := be.Queue, be.Blobs
	guard := netguard.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, nil)
	client, err := httpfetch.New(httpfetch.Options{UserAgent: userAgent, Guard: guard, TotalTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	cfg := fetcher.DefaultConfig()
	cfg.FetchQueue, cfg.ParseQueue = fetchQ, parseQ
	cfg.HostRPS, cfg.HostConcurrency = 0, 0
	cfg.MaxQuickRetry = 0 // no quick retries: a retryable status is handled at once
	if tune != nil {
		tune(&cfg)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	slots := &embedtest.CountingTable{Table: be.Table, Only: func(k table.Key) bool { return crawlstate.KindOf(k) == "slot" }}
	tbl := &embedtest.CountingTable{Table: slots, Only: func(k table.Key) bool { return crawlstate.KindOf(k) == "url" }}
	clock := &testClock{}
	state := crawlstate.New(tbl, append([]crawlstate.Option{crawlstate.WithClock(clock.now)}, opts...)...)
	send := &delayedSend{q: q, delays: map[string]time.Duration{}}
	hand := handoff.New(0, 0)
	h := fetcher.New(cfg, withState(state, fetcher.Deps{HTTP: client, Robots: robots.New(client, userAgent, time.Hour),
		Scope: scope.DefaultRules(), Guard: guard, Pages: blobs, Handoff: hand, Send: send, Log: log,
		Now: clock.now})) // the store's clock, which a test may move
	return &env{t: t, site: newSite(t), q: q, send: send, blobs: blobs, blobDir: be.BlobDir, state: state, clock: clock, urls: tbl, slots: slots,
		hand: hand, client: client, h: h}
}

// url is the site's URL for path.
func (e *env) url(path string) string { return e.site.srv.URL + path }

// sample returns the fetch sample moved onto the site, with every URL admitted as schedule would.
func (e *env) sample() events.SQSEvent {
	e.t.Helper()
	b, err := samples.Read(samples.SQSFetch)
	if err != nil {
		e.t.Fatal(err)
	}
	var ev events.SQSEvent
	if err := jsonUnmarshal(samples.Rewrite(b, e.site.srv.URL), &ev); err != nil {
		e.t.Fatal(err)
	}
	for _, r := range ev.Records {
		m, err := message.DecodeFetch(r.Body)
		if err != nil {
			e.t.Fatal(err)
		}
		e.admit(m.URL, m.Root, m.Depth)
	}
	return ev
}

// record is the sample's first record carrying a fetch message for path on its receives-th
// receive; the URL is admitted.
func (e *env) record(id, path string, receives int) events.SQSMessage {
	e.t.Helper()
	rec := e.sample().Records[0]
	m := message.Fetch{Header: message.Header{Crawl: crawl}, Target: message.Target{URL: e.url(path), Root: e.url("/"), Depth: 1}}
	body, err := message.Encode(m)
	if err != nil {
		e.t.Fatal(err)
	}
	rec.MessageId, rec.Body = id, body
	rec.Attributes = map[string]string{"ApproximateReceiveCount": itoa(receives), "SentTimestamp": "1795982400000"}
	e.admit(m.URL, m.Root, m.Depth)
	return rec
}

// seedRecord is a record carrying the fetch message of seed raw (depth 0, its own root), admitted.
func (e *env) seedRecord(id, raw string) events.SQSMessage {
	e.t.Helper()
	rec := e.record(id, "/", 1)
	body, err := message.Encode(message.Fetch{Header: message.Header{Crawl: crawl}, Target: message.Target{URL: raw, Root: raw}})
	if err != nil {
		e.t.Fatal(err)
	}
	rec.Body = body
	e.admit(raw, raw, 0)
	return rec
}

func (e *env) admit(raw, root string, depth int) {
	e.t.Helper()
	ctx := context.Background()
	key := keyOf(e.t, raw)
	if _, err := e.state.Admit(ctx, crawl, key, raw, root, depth, "links"); err != nil {
		e.t.Fatal(err)
	}
}

func keyOf(t *testing.T, raw string) string {
	t.Helper()
	u, err := urlnorm.Normalize(raw)
	if err != nil {
		t.Fatal(err)
	}
	return urlnorm.Key(u.String())
}

func (e *env) item(path string) crawlstate.URL {
	e.t.Helper()
	u, err := e.state.Get(context.Background(), crawl, keyOf(e.t, e.url(path)))
	if err != nil {
		e.t.Fatal(err)
	}
	return u
}

// wantFetched fails the test for each of paths whose URL is not fetched.
func (e *env) wantFetched(paths []string) {
	e.t.Helper()
	for _, p := range paths {
		if it := e.item(p); it.State != crawlstate.Fetched {
			e.t.Errorf("%s = %s, want fetched", p, it.State)
		}
	}
}

// onePages lists the pages of a parse message, each as a one-page message.
func onePages(m *message.Parse) []*message.Parse {
	file, pages := m.PageList()
	out := make([]*message.Parse, len(pages))
	for i, p := range pages {
		out[i] = &message.Parse{Header: m.Header, URL: p.URL, FinalURL: p.FinalURL, Root: p.Root, Depth: p.Depth,
			Status: p.Status, ContentType: p.ContentType, FetchedAt: p.FetchedAt, WARC: p.Ref(file)}
	}
	return out
}

// onlyParseMessage takes the one parse message on its queue and reads back the page it points at.
func (e *env) onlyParseMessage() (*message.Parse, warcfile.Page) {
	e.t.Helper()
	msgs := e.received(parseQ)
	if len(msgs) != 1 {
		e.t.Fatalf("%d parse messages sent, want 1", len(msgs))
	}
	full, err := message.DecodeParse(msgs[0].Body)
	if err != nil {
		e.t.Fatal(err)
	}
	pms := onePages(full)
	if len(pms) != 1 {
		e.t.Fatalf("the parse message names %d pages, want 1", len(pms))
	}
	pm := pms[0]
	raw, err := e.blobs.GetRange(context.Background(), pm.WARC.Key, pm.WARC.Offset, pm.WARC.Length)
	if err != nil {
		e.t.Fatalf("read the page of the parse message back: %v", err)
	}
	p, err := warcfile.Decode(raw)
	if err != nil {
		e.t.Fatalf("decode the page of the parse message: %v", err)
	}
	return pm, p
}

func (e *env) handle(recs ...events.SQSMessage) []string {
	e.t.Helper()
	return embedtest.Failures(e.t, e.h.Handle, recs...)
}

// received takes every visible message of the queue.
func (e *env) received(name string) []queue.Message {
	e.t.Helper()
	var out []queue.Message
	for {
		msgs, err := e.q.Receive(context.Background(), name, queue.MaxBatch, time.Minute, 0)
		if err != nil {
			e.t.Fatal(err)
		}
		if len(msgs) == 0 {
			return out
		}
		out = append(out, msgs...)
	}
}

func TestFetchSampleBatch(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	ev := e.sample()
	if got := e.handle(ev.Records...); len(got) != 0 {
		t.Fatalf("BatchItemFailures = %v, want none", got)
	}
	for _, p := range []string{"/", "/about"} {
		if it := e.item(p); it.State != crawlstate.Fetched || it.Class != "" {
			t.Errorf("%s = %+v, want fetched", p, it)
		}
	}
	var got []string
	var pms []*message.Parse
	sent := e.received(parseQ)
	for _, m := range sent {
		full, err := message.DecodeParse(m.Body)
		if err != nil {
			t.Fatalf("invalid parse message: %v", err)
		}
		pms = append(pms, onePages(full)...)
	}
	// The batch's pages share one WARC file, and one parse message names them all.
	if len(sent) != 1 || len(pms) != 2 {
		t.Errorf("%d parse messages naming %d pages, want 1 naming the batch's 2", len(sent), len(pms))
	}
	for _, pm := range pms {
		raw, err := e.blobs.GetRange(ctx, pm.WARC.Key, pm.WARC.Offset, pm.WARC.Length)
		if err != nil {
			t.Fatalf("parse message points at %+v: %v", pm.WARC, err)
		}
		p, err := warcfile.Decode(raw)
		if err != nil {
			t.Fatalf("WARC record of %s: %v", pm.URL, err)
		}
		if p.URL != pm.FinalURL || p.Status != 200 || string(p.Body) != page || pm.Crawl != crawl {
			t.Errorf("WARC record = %s %d %q for parse message %+v", p.URL, p.Status, p.Body, pm)
		}
		// The page handed to a parse handler in the same process is the page as stored.
		handed, ok := e.hand.Take(pm.WARC)
		if !ok {
			t.Errorf("%s was not handed over at %+v", pm.URL, pm.WARC)
		} else if handed.URL != p.URL || handed.Status != p.Status || !bytes.Equal(handed.Body, p.Body) ||
			!reflect.DeepEqual(handed.Header, p.Header) || !handed.FetchedAt.Equal(p.FetchedAt) {
			t.Errorf("handed over %+v, stored %+v", handed, p)
		}
		got = append(got, pm.URL)
	}
	slices.Sort(got)
	if want := []string{e.url("/"), e.url("/about")}; !reflect.DeepEqual(got, want) {
		t.Errorf("parse messages for %v, want %v", got, want)
	}
	keys, err := e.blobs.List(ctx, fetcher.PagesPrefix+crawl+"/")
	if err != nil || len(keys) != 2 || keys[1] != keys[0]+warcfile.IndexSuffix {
		t.Fatalf("WARC files = %v, %v; want one for the batch and its index", keys, err)
	}
	// An independent reader checks the file's digests, and that its index finds both pages.
	dir := t.TempDir()
	for _, k := range keys {
		b, err := e.blobs.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, path.Base(k)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sum := warctest.Check(t, filepath.Join(dir, path.Base(keys[0])))
	if sum.Warcinfo != 1 || sum.Responses != 2 || sum.Requests != 2 || sum.Resolved != 2 {
		t.Errorf("warcio.js saw %+v, want a warcinfo record, 2 responses, 2 requests and 2 index lines that resolve", sum)
	}
}

func TestDuplicateFetchMessageIsAcknowledgedWithoutARequest(t *testing.T) {
	e := newEnv(t, nil)
	ev := e.sample()
	if got := e.handle(ev.Records...); len(got) != 0 {
		t.Fatalf("first delivery: BatchItemFailures = %v", got)
	}
	e.received(parseQ)
	again := ev.Records[0] // SQS delivers the same message again
	other := ev.Records[0] // or schedule sent the URL twice
	other.MessageId = "another-message-id"
	before := e.site.hitsOf("/")
	if got := e.handle(again, other); len(got) != 0 {
		t.Errorf("duplicates: BatchItemFailures = %v, want none", got)
	}
	if n := e.site.hitsOf("/") - before; n != 0 {
		t.Errorf("the server got %d more requests for /, want 0", n)
	}
	// The page is stored but not parsed yet: the duplicate re-sends its parse message from the
	// stored location (the fetch stage's outbox), and parse drops the extra copies. The copy sent
	// twice, on its first delivery in the same batch, is worked on once (decode).
	if m := e.received(parseQ); len(m) != 1 {
		t.Errorf("duplicates of an unparsed page sent %d parse messages, want 1", len(m))
	}
	it, err := e.state.Get(context.Background(), crawl, keyOf(t, again0URL(t, again)))
	if err != nil || it.Page == nil || it.Page.Msg == "" {
		t.Fatalf("the fetched URL %+v (%v) names no parse message", it, err)
	}
	if _, err := e.state.MarkMessageParsed(context.Background(), crawl, it.Page.Msg); err != nil {
		t.Fatal(err)
	}
	if got := e.handle(again); len(got) != 0 {
		t.Errorf("duplicate after parse: BatchItemFailures = %v", got)
	}
	if m := e.received(parseQ); len(m) != 0 {
		t.Errorf("a duplicate of a parsed page sent %d parse messages, want 0", len(m))
	}
	if n := e.site.hitsOf("/") - before; n != 0 {
		t.Errorf("the server got %d more requests for /, want 0", n)
	}
}

func again0URL(t *testing.T, rec events.SQSMessage) string {
	t.Helper()
	m, err := message.DecodeFetch(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	return m.URL
}

// A crash between storing a page and sending its parse message loses nothing: the redelivered
// fetch message sends the parse message again, without fetching the page again.
func TestLostParseMessageIsSentAgainWithoutAFetch(t *testing.T) {
	e := newEnv(t, nil)
	e.send.failParse = true // the parse message is lost, as in a crash right after the record
	rec := e.record("msg-1", "/about", 1)
	if got := e.handle(rec); !reflect.DeepEqual(got, []string{"msg-1"}) {
		t.Fatalf("BatchItemFailures = %v, want [msg-1] (the send failed)", got)
	}
	if it := e.item("/about"); it.State != crawlstate.Fetched || it.Page == nil {
		t.Fatalf("url = %s, page %v; want fetched with its location", it.State, it.Page)
	}
	e.send.failParse = false
	rec.Attributes["ApproximateReceiveCount"] = "2"
	if got := e.handle(rec); len(got) != 0 {
		t.Fatalf("redelivery: BatchItemFailures = %v", got)
	}
	if _, p := e.onlyParseMessage(); p.URL != e.url("/about") {
		t.Errorf("the re-sent parse message points at %v, want the stored /about", p.URL)
	}
	if n := e.site.hitsOf("/about"); n != 1 {
		t.Errorf("/about was fetched %d times, want once", n)
	}
}

// The embedded store syncs a WARC file while fetch records its pages, so a power loss in between
// can lose the file, or leave it empty, short or zero-filled, while the records survive. The
// redelivered fetch message finds the page gone and fetches it again; the crawl counts it once.
func TestAPageLostBeforeItsFileSyncedIsFetchedAgain(t *testing.T) {
	for _, tt := range []struct {
		name string
		hurt func(path string, size int64) error
	}{
		{"missing", func(path string, _ int64) error { return os.Remove(path) }},
		{"empty", func(path string, _ int64) error { return os.Truncate(path, 0) }},
		{"short", func(path string, size int64) error { return os.Truncate(path, size/2) }},
		{"zero-filled", func(path string, size int64) error { return os.WriteFile(path, make([]byte, size), 0o644) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			e.send.failParse = true // the power went before the parse message went out
			rec := e.record("msg-1", "/about", 1)
			if got := e.handle(rec); !reflect.DeepEqual(got, []string{"msg-1"}) {
				t.Fatalf("BatchItemFailures = %v, want [msg-1] (the send failed)", got)
			}
			lost := e.item("/about")
			if lost.State != crawlstate.Fetched || lost.Page == nil {
				t.Fatalf("url = %s, page %v; want fetched with its location", lost.State, lost.Page)
			}
			path := filepath.Join(e.blobDir, filepath.FromSlash(lost.Page.WARCKey))
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := tt.hurt(path, st.Size()); err != nil {
				t.Fatal(err)
			}
			e.send.failParse = false
			rec.Attributes["ApproximateReceiveCount"] = "2"
			if got := e.handle(rec); len(got) != 0 {
				t.Fatalf("redelivery: BatchItemFailures = %v", got)
			}
			if n := e.site.hitsOf("/about"); n != 2 {
				t.Errorf("/about was fetched %d times, want twice", n)
			}
			pm, p := e.onlyParseMessage()
			if p.URL != e.url("/about") {
				t.Errorf("the parse message points at %v, want the page stored again", p.URL)
			}
			if it := e.item("/about"); it.State != crawlstate.Fetched || it.Page == nil || it.Page.WARCKey != pm.WARC.Key {
				t.Errorf("url = %s, page %v; want fetched, stored where the parse message points", it.State, it.Page)
			}
			if c, err := e.state.Counters(context.Background(), crawl); err != nil || c.Fetched != 1 {
				t.Errorf("counters = %+v, %v; want the page counted fetched once", c, err)
			}
		})
	}
}

// failingSync is the embedded store with a sync that fails, as on a disk error.
type failingSync struct {
	*fileblob.Store
	mu   sync.Mutex
	puts []string // the keys written again with Put
}

func (f *failingSync) PutDeferred(ctx context.Context, key string, body []byte, contentType string) (func() error, error) {
	durable, err := f.Store.PutDeferred(ctx, key, body, contentType)
	if err != nil {
		return nil, err
	}
	return func() error {
		durable()
		return errors.New("sync: input/output error")
	}, nil
}

func (f *failingSync) Put(ctx context.Context, key string, body []byte, contentType string) error {
	f.mu.Lock()
	f.puts = append(f.puts, key)
	f.mu.Unlock()
	return f.Store.Put(ctx, key, body, contentType)
}

// A WARC file whose deferred sync fails is written again with a durable Put before its parse
// messages go out.
func TestAFailedSyncWritesThePagesAgain(t *testing.T) {
	e := newEnv(t, nil)
	store := &failingSync{Store: e.blobs}
	cfg := fetcher.DefaultConfig()
	cfg.FetchQueue, cfg.ParseQueue, cfg.HostRPS, cfg.HostConcurrency = fetchQ, parseQ, 0, 0
	client, err := httpfetch.New(httpfetch.Options{UserAgent: userAgent, Guard: netguard.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, nil)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	e.h = fetcher.New(cfg, withState(e.state, fetcher.Deps{HTTP: client, Robots: robots.New(client, userAgent, time.Hour),
		Guard: netguard.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, nil),
		Pages: store, Send: e.send, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	if got := e.handle(e.record("msg-1", "/about", 1)); len(got) != 0 {
		t.Fatalf("BatchItemFailures = %v", got)
	}
	it := e.item("/about")
	if it.State != crawlstate.Fetched || it.Page == nil {
		t.Fatalf("url = %s; want fetched", it.State)
	}
	if want := []string{it.Page.WARCKey, it.Page.WARCKey + warcfile.IndexSuffix}; !reflect.DeepEqual(store.puts, want) {
		t.Errorf("written again with Put: %q, want the batch's file and its index %q", store.puts, want)
	}
	if msgs := e.received(parseQ); len(msgs) != 1 {
		t.Errorf("sent %d parse messages, want 1", len(msgs))
	}
}

func TestFetchOutcomes(t *testing.T) {
	cases := []struct {
		name     string
		path     string
		receives int
		retries  int  // deferred retries the message has had
		failed   bool // the record is in BatchItemFailures
		state    crawlstate.State
		class    errclass.Class
		hits     int // requests for path
		requeued int // fetch messages re-sent with a delay
	}{
		{"robots disallowed", "/private/page", 1, 0, false, crawlstate.Skipped, errclass.Robots, 0, 0},
		{"404 is terminal", "/missing", 1, 0, false, crawlstate.Failed, errclass.HTTP4xx, 1, 0},
		{"not HTML", "/data.json", 1, 0, false, crawlstate.Skipped, errclass.Type, 1, 0},
		// A 5xx goes back to the queue with the policy's wait and the count of requests made,
		// burning no receive, whatever the receive count.
		{"503 is re-queued", "/busy", 1, 0, false, crawlstate.Queued, "", 1, 1},
		{"503 on its third request is re-queued", "/busy", 5, 2, false, crawlstate.Queued, "", 1, 1},
		// The policy's fourth request fails for good, with its class, and the message is done:
		// the DLQ is for poison and backend failures.
		{"503 on its fourth request fails for good", "/busy", 1, 3, false, crawlstate.Failed, errclass.HTTP5xx, 1, 0},
		// A server's Retry-After is waited for in the queue, within the same bound.
		{"429 with Retry-After is re-queued", "/slow-down", 1, 0, false, crawlstate.Queued, "", 1, 1},
		{"429 on its fourth request fails for good", "/slow-down", 1, 3, false, crawlstate.Failed, errclass.HTTP429, 1, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, nil)
			rec := e.record("msg-1", c.path, c.receives)
			if c.retries > 0 {
				m, err := message.DecodeFetch(rec.Body)
				if err != nil {
					t.Fatal(err)
				}
				m.Retries = c.retries
				if rec.Body, err = message.Encode(m); err != nil {
					t.Fatal(err)
				}
			}
			got := e.handle(rec)
			want := []string{}
			if c.failed {
				want = []string{"msg-1"}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("BatchItemFailures = %v, want %v", got, want)
			}
			it := e.item(c.path)
			if it.State != c.state || it.Class != c.class {
				t.Errorf("url = %s/%s (%s), want %s/%s", it.State, it.Class, it.Detail, c.state, c.class)
			}
			// A claim left on a URL without an outcome must pass to whatever fetches it next:
			// the message's redelivery, or the message it was re-queued as.
			if it.State == crawlstate.Queued && it.Owner != "" {
				if c.failed {
					orig, err := message.DecodeFetch(rec.Body)
					if err != nil {
						t.Fatal(err)
					}
					if err := e.claimAs(orig, "msg-1"); err != nil {
						t.Errorf("the redelivery of msg-1 cannot claim %s: %v", c.path, err)
					}
				}
			}
			if n := e.site.hitsOf(c.path); n != c.hits {
				t.Errorf("%d requests for %s, want %d", n, c.path, c.hits)
			}
			if m := e.received(parseQ); len(m) != 0 {
				t.Errorf("sent %d parse messages, want none", len(m))
			}
			msgs := e.received(fetchQ)
			if len(msgs) != c.requeued {
				t.Fatalf("re-queued %d fetch messages, want %d", len(msgs), c.requeued)
			}
			for _, q := range msgs {
				m, err := message.DecodeFetch(q.Body)
				if err != nil {
					t.Fatal(err)
				}
				if m.Retries != c.retries+1 || q.ReceiveCount != 1 {
					t.Errorf("re-queued with %d retries on receive %d, want %d retries on a fresh message",
						m.Retries, q.ReceiveCount, c.retries+1)
				}
				if err := e.claimAs(m, "msg-next"); err != nil {
					t.Errorf("the re-queued message of %s cannot claim it: %v", c.path, err)
				}
			}
		})
	}
}

// claimAs claims m's URL as a message with id owner would: in its group, passed on from the owners
// m names (message.Target.Prev). It returns crawlstate.ErrClaimed when the URL is held or done.
func (e *env) claimAs(m *message.Fetch, owner string) error {
	e.t.Helper()
	key := urlnorm.Key(m.URL)
	group := m.Group
	if group == "" {
		group = key
	}
	got, err := e.state.ClaimGroup(context.Background(), m.Crawl, group, owner, m.Prev, time.Minute, []string{key})
	if err != nil {
		return err
	}
	if _, ok := got[key]; !ok {
		return crawlstate.ErrClaimed
	}
	return nil
}

// requeued returns the one fetch message re-sent to the fetch queue and its requested delay.
func (e *env) requeued() (*message.Fetch, time.Duration, int) {
	e.t.Helper()
	msgs := e.received(fetchQ)
	if len(msgs) != 1 {
		e.t.Fatalf("%d messages re-queued, want 1", len(msgs))
	}
	m, err := message.DecodeFetch(msgs[0].Body)
	if err != nil {
		e.t.Fatal(err)
	}
	e.send.mu.Lock()
	defer e.send.mu.Unlock()
	return m, e.send.delays[msgs[0].Body], msgs[0].ReceiveCount
}

func TestLongRetryAfterIsRequeuedWithADelay(t *testing.T) {
	e := newEnv(t, nil)
	if got := e.handle(e.record("msg-1", "/slow-down", 1)); len(got) != 0 {
		t.Errorf("BatchItemFailures = %v, want none: the wait is a delayed re-queue", got)
	}
	m, delay, _ := e.requeued()
	if m.URL != e.url("/slow-down") || m.Retries != 1 || m.Waits != 0 {
		t.Errorf("re-queued %+v, want the same URL with retries 1", m)
	}
	if delay != queue.MaxDelay {
		t.Errorf("delay = %v, want %v (Retry-After: 3600, capped at SQS's longest delay)", delay, queue.MaxDelay)
	}
	if it := e.item("/slow-down"); it.State != crawlstate.Queued {
		t.Errorf("url = %+v, want queued", it)
	}
	if err := e.claimAs(m, "msg-2"); err != nil {
		t.Errorf("the re-queued message cannot claim its URL: %v", err)
	}
	// The rest of the hour is chained: the re-queued message carries when it may be fetched, and
	// receiving it early sends it on again without a request.
	if wait := time.Until(m.NotBefore); wait < 59*time.Minute || wait > time.Hour {
		t.Fatalf("NotBefore is %v away, want the hour of the Retry-After", wait)
	}
	body, err := message.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	early := e.record("msg-2", "/slow-down", 1)
	early.Body = body
	hits := e.site.hitsOf("/slow-down")
	if got := e.handle(early); len(got) != 0 {
		t.Errorf("BatchItemFailures = %v, want none", got)
	}
	again, delay, _ := e.requeued()
	if e.site.hitsOf("/slow-down") != hits || !again.NotBefore.Equal(m.NotBefore) || delay != queue.MaxDelay {
		t.Errorf("an early message was fetched or lost its wait: %+v, delay %v", again, delay)
	}
}

func TestPolitenessWaitIsRequeuedAndBurnsNoReceives(t *testing.T) {
	// Even on the message's last allowed receive, waiting acknowledges it.
	for _, receives := range []int{1, 5} {
		t.Run("receive_"+itoa(receives), func(t *testing.T) {
			interval := 100 * time.Second
			e := newEnv(t, func(c *fetcher.Config) { c.HostRPS = float64(time.Second) / float64(interval) })
			u, _ := url.Parse(e.url("/"))
			// Another worker has just fetched from the host: its next slot is interval away.
			if wait, err := e.state.ReserveSlot(context.Background(), u.Host, interval); err != nil || wait != 0 {
				t.Fatalf("ReserveSlot = %v, %v", wait, err)
			}
			rec := e.record("msg-1", "/about", receives)
			before := e.urls.Writes()
			if got := e.handle(rec); len(got) != 0 {
				t.Errorf("BatchItemFailures = %v, want none", got)
			}
			m, delay, got := e.requeued()
			if m.URL != e.url("/about") || m.Waits != 1 || m.Retries != 0 {
				t.Errorf("re-queued %+v, want the same URL with waits 1", m)
			}
			if delay <= fetcher.MaxInlineWait || delay > queue.MaxDelay {
				t.Errorf("delay = %v, want more than %v and at most %v", delay, fetcher.MaxInlineWait, queue.MaxDelay)
			}
			if got != 1 {
				t.Errorf("the re-queued message is on receive %d, want 1", got)
			}
			if n := e.site.hitsOf("/about"); n != 0 {
				t.Errorf("%d requests for /about while the host's slot was taken, want 0", n)
			}
			if !m.Slot.After(time.Now()) || m.Gap != interval.Milliseconds() {
				t.Errorf("re-queued with slot %v, gap %dms: want its own slot ahead, %v after the last", m.Slot, m.Gap, interval)
			}
			if it := e.item("/about"); it.State != crawlstate.Queued || it.Lease.After(time.Now()) {
				t.Errorf("url = %+v, want queued and unclaimed", it)
			}
			// Nothing is claimed before the slot is in hand, and a claim an earlier delivery may
			// have left passes to the re-queued message (its Prev): no write at all.
			if n := e.urls.Writes() - before; n != 0 {
				t.Errorf("%d table writes while it waited for its host, want 0", n)
			}
			if receives > 1 && !slices.Contains(m.Prev, "msg-1") {
				t.Errorf("the re-queued message of a redelivery names %v as the owners before it, want msg-1", m.Prev)
			}
		})
	}
}

// A delivery that failed after its claim leaves it under the message's id. If the redelivery must
// wait for its host, it is re-sent as a new message: the old claim passes to it (its Prev names
// the old owner), or the URL would be held with no message left to fetch it; a message that
// names no such owner still finds the URL held.
func TestARedeliveryThatWaitsPassesItsEarlierClaimOn(t *testing.T) {
	interval := 100 * time.Second
	e := newEnv(t, func(c *fetcher.Config) { c.HostRPS = float64(time.Second) / float64(interval) })
	rec := e.record("msg-1", "/about", 2)
	m, err := message.DecodeFetch(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	key := urlnorm.Key(m.URL)
	if _, err := e.state.Claim(context.Background(), m.Crawl, key, "msg-1", time.Hour); err != nil {
		t.Fatal(err)
	}
	e.hostBusy(interval)
	if got := e.handle(rec); len(got) != 0 {
		t.Errorf("BatchItemFailures = %v, want none", got)
	}
	again, _, _ := e.requeued()
	if again.Slot.IsZero() {
		t.Fatalf("re-queued %+v, want it to hold a slot", again)
	}
	if err := e.claimAs(&message.Fetch{Header: again.Header, Target: message.Target{URL: again.URL}}, "msg-3"); !errors.Is(err, crawlstate.ErrClaimed) {
		t.Errorf("a stranger's message claimed the URL held for the re-sent one: %v", err)
	}
	if err := e.claimAs(again, "msg-2"); err != nil {
		t.Errorf("the re-sent message cannot claim the URL: %v (the earlier claim did not pass on)", err)
	}
}

// A host booked beyond the slot horizon gets no slot reserved far ahead: the message waits for
// the booking to end, as long as SQS lets it, and asks again.
func TestAHostBookedBeyondTheHorizonIsWaitedForWithoutASlot(t *testing.T) {
	interval := 2 * fetcher.SlotHorizon
	e := newEnv(t, func(c *fetcher.Config) { c.HostRPS = float64(time.Second) / float64(interval) })
	u, _ := url.Parse(e.url("/"))
	if _, err := e.state.ReserveSlot(context.Background(), u.Host, interval); err != nil {
		t.Fatal(err)
	}
	if got := e.handle(e.record("msg-1", "/about", 1)); len(got) != 0 {
		t.Errorf("BatchItemFailures = %v, want none", got)
	}
	m, delay, _ := e.requeued()
	if !m.Slot.IsZero() || m.Waits != 1 || delay != queue.MaxDelay {
		t.Errorf("re-queued %+v with delay %v, want no slot, waits 1, delay %v", m, delay, queue.MaxDelay)
	}
	if got, _ := e.state.ReserveSlots(context.Background(), u.Host, interval, 1, 0); got.Start.Sub(time.Now()) > interval {
		t.Errorf("the next free slot is %v away: the waiting message booked one too", time.Until(got.Start))
	}
}

// robotsFunc is a RobotsChecker made of a function.
type robotsFunc func(context.Context, *url.URL) (robots.Decision, error)

func (f robotsFunc) Check(ctx context.Context, u *url.URL) (robots.Decision, error) { return f(ctx, u) }

// A failure that is not the page's (here the robots cache's backend) fails the record so SQS
// delivers it again; on the last allowed receive the URL is recorded failed first, and the message
// goes on to the DLQ, from where `crawl redrive fetch` can retry it.
func TestInfrastructureFailureGoesToTheDLQOnTheLastReceive(t *testing.T) {
	for _, tt := range []struct {
		receives int
		state    crawlstate.State
	}{{1, crawlstate.Queued}, {4, crawlstate.Queued}, {5, crawlstate.Failed}} {
		t.Run("receive_"+itoa(tt.receives), func(t *testing.T) {
			e := newEnv(t, nil)
			cfg := fetcher.DefaultConfig()
			cfg.FetchQueue, cfg.ParseQueue, cfg.HostRPS = fetchQ, parseQ, 0
			broken := robotsFunc(func(context.Context, *url.URL) (robots.Decision, error) {
				return robots.Decision{}, errclass.Errorf(errclass.Internal, "table unavailable")
			})
			e.h = fetcher.New(cfg, withState(e.state, fetcher.Deps{Robots: broken,
				Guard: netguard.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, nil),
				Pages: e.blobs, Send: e.send, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}))
			if got := e.handle(e.record("msg-1", "/", tt.receives)); !reflect.DeepEqual(got, []string{"msg-1"}) {
				t.Errorf("BatchItemFailures = %v, want [msg-1]", got)
			}
			it := e.item("/")
			if it.State != tt.state || it.Owner != "" && it.State == crawlstate.Queued {
				t.Errorf("url = %s (owner %q), want %s with the claim released", it.State, it.Owner, tt.state)
			}
			if tt.state == crawlstate.Failed && it.Class != errclass.Internal {
				t.Errorf("class = %q, want internal", it.Class)
			}
			if n := e.site.hitsOf("/"); n != 0 {
				t.Errorf("fetched / %d times despite the failure", n)
			}
		})
	}
}

// A redirect target is fetched once: a later link to it is known, not fetched again.
func TestRedirectTargetIsNotFetchedAgain(t *testing.T) {
	e := newEnv(t, nil)
	if got := e.handle(e.record("msg-1", "/old", 1)); len(got) != 0 {
		t.Fatalf("BatchItemFailures = %v", got)
	}
	if it := e.item("/old"); it.State != crawlstate.Fetched {
		t.Fatalf("/old = %s, want fetched", it.State)
	}
	target := e.item("/about")
	if target.State != crawlstate.Skipped || target.Class != errclass.Dup {
		t.Errorf("/about = %s/%s, want skipped/duplicate (fetched through /old)", target.State, target.Class)
	}
	res, err := e.state.Admit(context.Background(), crawl, keyOf(t, e.url("/about")), e.url("/about"), e.url("/"), 2, "links")
	if err != nil || res != crawlstate.Known {
		t.Errorf("admitting the redirect target again = %v, %v; want Known", res, err)
	}
	if n := e.site.hitsOf("/about"); n != 1 {
		t.Errorf("/about was requested %d times, want once (through the redirect)", n)
	}
}

// A redirect is followed only to a URL the crawl may fetch: in scope and allowed by robots.txt.
func TestRedirectsFollowOnlyWhereTheCrawlMayGo(t *testing.T) {
	cases := []struct {
		name, path string
		class      errclass.Class
		target     string // the path the redirect points at, never requested
	}{
		{"to another host", "/away", errclass.Scope, "/about"},
		{"to a page robots.txt disallows", "/to-private", errclass.Robots, "/private/page"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, nil)
			if got := e.handle(e.record("msg-1", c.path, 1)); len(got) != 0 {
				t.Fatalf("BatchItemFailures = %v, want none", got)
			}
			it := e.item(c.path)
			if it.State != crawlstate.Skipped || it.Class != c.class || !strings.Contains(it.Detail, "redirect to") {
				t.Errorf("%s = %s/%s (%q), want skipped/%s naming the redirect", c.path, it.State, it.Class, it.Detail, c.class)
			}
			if n := e.site.hitsOf(c.target); n != 0 {
				t.Errorf("the redirect target %s was requested %d times, want never", c.target, n)
			}
			if m := e.received(parseQ); len(m) != 0 {
				t.Errorf("sent %d parse messages, want none", len(m))
			}
		})
	}
}

// A seed that redirects to another host is followed, and the target becomes the root of the links
// found there: http://example.com/ moving to https://www.example.com/ is how many sites start.
func TestSeedRedirectToAnotherHostBecomesTheRoot(t *testing.T) {
	e := newEnv(t, nil)
	ln, err := net.Listen("tcp", "127.0.0.2:0") // another host, still on loopback
	if err != nil {
		t.Fatal(err)
	}
	other := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/home" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, page)
	}))
	other.Listener.Close()
	other.Listener = ln
	other.Start()
	t.Cleanup(other.Close)
	target := other.URL + "/home"
	e.site.mu.Lock()
	e.site.elsewhere = target
	e.site.mu.Unlock()

	seed := e.url("/moved-seed")
	if got := e.handle(e.seedRecord("msg-1", seed)); len(got) != 0 {
		t.Fatalf("BatchItemFailures = %v, want none", got)
	}
	if it := e.item("/moved-seed"); it.State != crawlstate.Fetched {
		t.Fatalf("the seed = %s/%s (%s), want fetched through its redirect", it.State, it.Class, it.Detail)
	}
	msgs := e.received(parseQ)
	if len(msgs) != 1 {
		t.Fatalf("%d parse messages, want 1", len(msgs))
	}
	full, err := message.DecodeParse(msgs[0].Body)
	if err != nil {
		t.Fatal(err)
	}
	m := onePages(full)[0]
	if m.FinalURL != target || m.Root != target || m.URL != seed {
		t.Errorf("parse message url %s, final %s, root %s; want the seed, then %s as final url and root", m.URL, m.FinalURL, m.Root, target)
	}
}

// A URL on a non-public address is skipped without a request, and said at the default log level:
// otherwise a missing --allow-net looks like a fetch that silently did nothing.
func TestBlockedAddressIsSkippedAndLogged(t *testing.T) {
	e := newEnv(t, nil)
	var logs bytes.Buffer
	cfg := fetcher.DefaultConfig()
	cfg.FetchQueue, cfg.ParseQueue, cfg.HostRPS = fetchQ, parseQ, 0
	e.h = fetcher.New(cfg, withState(e.state, fetcher.Deps{Guard: netguard.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, nil),
		Pages: e.blobs, Send: e.send, Log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))}))
	const blocked = "http://10.1.2.3/inside" // refused by the guard before any dial
	if got := e.handle(e.seedRecord("msg-1", blocked)); len(got) != 0 {
		t.Fatalf("BatchItemFailures = %v, want none", got)
	}
	u, err := e.state.Get(context.Background(), crawl, keyOf(t, blocked))
	if err != nil {
		t.Fatal(err)
	}
	if u.State != crawlstate.Skipped || u.Class != errclass.SSRF {
		t.Errorf("%s = %s/%s, want skipped/ssrf", blocked, u.State, u.Class)
	}
	if out := logs.String(); !strings.Contains(out, "level=INFO") || !strings.Contains(out, "class=ssrf") ||
		!strings.Contains(out, blocked) {
		t.Errorf("log = %q, want an INFO line naming the URL and class ssrf", out)
	}
}

// A robots.txt that is down (5xx, unreachable) keeps the URL waiting, not skipped for good.
func TestRobotsDownIsWaitedFor(t *testing.T) {
	e := newEnv(t, nil)
	cfg := fetcher.DefaultConfig()
	cfg.FetchQueue, cfg.ParseQueue, cfg.HostRPS = fetchQ, parseQ, 0
	down := robotsFunc(func(context.Context, *url.URL) (robots.Decision, error) {
		return robots.Decision{Allowed: false, Reason: "robots.txt status 503: disallow all", RetryAfter: 5 * time.Minute}, nil
	})
	e.h = fetcher.New(cfg, withState(e.state, fetcher.Deps{Robots: down,
		Guard: netguard.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, nil),
		Pages: e.blobs, Send: e.send, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	if got := e.handle(e.record("msg-1", "/", 1)); len(got) != 0 {
		t.Errorf("BatchItemFailures = %v, want none: the wait is a delayed re-queue", got)
	}
	if it := e.item("/"); it.State != crawlstate.Queued {
		t.Errorf("url = %s/%s, want still queued", it.State, it.Class)
	}
	m, delay, _ := e.requeued()
	if m.Retries != 1 || delay != 5*time.Minute {
		t.Errorf("re-queued with %d retries and a %v delay, want 1 and 5m", m.Retries, delay)
	}
}

// With too little of the invocation left to fetch and store a page, the URL waits for a fresh
// invocation instead of overrunning Lambda's timeout (which would fail the whole batch).
func TestNoFetchStartsTooCloseToTheDeadline(t *testing.T) {
	e := newEnv(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	resp, err := e.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{e.record("msg-1", "/about", 1)}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle = %v, %v; want the record re-queued and done", resp.BatchItemFailures, err)
	}
	if n := e.site.hitsOf("/about"); n != 0 {
		t.Errorf("fetched /about %d times with 8 s left", n)
	}
	m, _, _ := e.requeued()
	if m.Waits != 1 || m.Retries != 0 {
		t.Errorf("re-queued %+v, want one wait", m)
	}
	if it := e.item("/about"); it.State != crawlstate.Queued || it.Owner != "" {
		t.Errorf("url = %s, owner %q; want queued and released", it.State, it.Owner)
	}
}

// Quick retries take the host's politeness slot like any request: with Crawl-delay-like spacing
// and a busy slot, a 503 is retried through the queue, not hammered in place.
func TestQuickRetriesKeepThePolitenessSlot(t *testing.T) {
	e := newEnv(t, func(c *fetcher.Config) {
		c.HostRPS = 0.1 // one request per 10 s
		c.MaxQuickRetry = 30 * time.Second
	})
	if got := e.handle(e.record("msg-1", "/busy", 1)); !reflect.DeepEqual(got, []string{"msg-1"}) {
		t.Errorf("BatchItemFailures = %v, want [msg-1]", got)
	}
	if n := e.site.hitsOf("/busy"); n != 1 {
		t.Errorf("/busy was requested %d times within one slot, want 1", n)
	}
}

// A message re-queued for the slot reserved for it fetches when it arrives in that slot, without
// racing for the next one; one that arrives early keeps waiting.
func TestHeldPolitenessSlot(t *testing.T) {
	interval := 1000 * time.Second
	e := newEnv(t, func(c *fetcher.Config) { c.HostRPS = float64(time.Second) / float64(interval) })
	u, _ := url.Parse(e.url("/"))
	if _, err := e.state.ReserveSlot(context.Background(), u.Host, interval); err != nil {
		t.Fatal(err)
	}
	withSlot := func(id, path string, slot time.Time) events.SQSMessage {
		rec := e.record(id, path, 1)
		m, err := message.DecodeFetch(rec.Body)
		if err != nil {
			t.Fatal(err)
		}
		m.Slot = slot
		if rec.Body, err = message.Encode(m); err != nil {
			t.Fatal(err)
		}
		return rec
	}
	if got := e.handle(withSlot("early", "/about", time.Now().Add(time.Hour))); len(got) != 0 {
		t.Fatalf("early: BatchItemFailures = %v", got)
	}
	if m, _, _ := e.requeued(); m.Slot.IsZero() || e.site.hitsOf("/about") != 0 {
		t.Errorf("an early message was fetched or lost its slot: %+v", m)
	}
	if got := e.handle(withSlot("due", "/about", time.Now().Add(-10*time.Millisecond))); len(got) != 0 {
		t.Fatalf("due: BatchItemFailures = %v", got)
	}
	if n := e.site.hitsOf("/about"); n != 1 {
		t.Errorf("a message in its own slot made %d requests, want 1", n)
	}
}

// TestAFetchMessageWithoutItsItemIsDropped: a fetch message whose URL has no item (its admission
// was taken back after a concurrent delivery of its links message sent it) is acknowledged
// without a request, where retrying it could only land it in the DLQ: the links message's
// redelivery admits the URL afresh and sends a fetch message of its own.
func TestAFetchMessageWithoutItsItemIsDropped(t *testing.T) {
	e := newEnv(t, nil)
	rec := e.record("m1", "/", 1)
	if err := e.state.Unadmit(context.Background(), crawl, keyOf(t, e.url("/")), keyOf(t, e.url("/"))); err != nil {
		t.Fatal(err)
	}
	if got := e.handle(rec); len(got) != 0 {
		t.Errorf("BatchItemFailures = %v, want none: the message is stale", got)
	}
	if n := e.site.hitsOf("/"); n != 0 {
		t.Errorf("the server got %d requests for /, want 0", n)
	}
	if m := e.received(parseQ); len(m) != 0 {
		t.Errorf("%d parse messages sent, want 0", len(m))
	}
}

// severalURLs is a record of a message of the site's paths, each admitted.
func (e *env) severalURLs(id string, paths ...string) events.SQSMessage {
	e.t.Helper()
	rec := e.record(id, paths[0], 1)
	var targets []message.Target
	for _, p := range paths {
		targets = append(targets, message.Target{URL: e.url(p), Root: e.url("/"), Depth: 1})
		e.admit(e.url(p), e.url("/"), 1)
	}
	body, err := message.Encode(message.Pack(crawl, targets))
	if err != nil {
		e.t.Fatal(err)
	}
	rec.Body = body
	return rec
}

// TestAFailedURLOfAMessageOfSeveralGoesBackAlone: each URL of a message of several is fetched as
// if it came alone. One whose record fails (a backend failure, here its robots.txt check) goes
// back to the queue in a message of its own, with a delay, and the message of several is
// acknowledged: its other pages are stored and sent to parse once. A 503 is re-queued by the
// retry policy, alone too.
func TestAFailedURLOfAMessageOfSeveralGoesBackAlone(t *testing.T) {
	e := newEnv(t, nil)
	cfg := fetcher.DefaultConfig()
	cfg.FetchQueue, cfg.ParseQueue, cfg.HostRPS, cfg.MaxQuickRetry = fetchQ, parseQ, 0, 0
	cache := robots.New(e.client, userAgent, time.Hour)
	broken := robotsFunc(func(ctx context.Context, u *url.URL) (robots.Decision, error) {
		if u.Path == "/old" {
			return robots.Decision{}, errclass.Errorf(errclass.Internal, "table unavailable")
		}
		return cache.Check(ctx, u)
	})
	e.h = fetcher.New(cfg, withState(e.state, fetcher.Deps{HTTP: e.client, Robots: broken,
		Guard: netguard.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, nil),
		Pages: e.blobs, Send: e.send, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	if got := e.handle(e.severalURLs("msg-1", "/", "/about", "/busy", "/old")); len(got) != 0 {
		t.Fatalf("BatchItemFailures = %v, want none: the failed URLs go back alone", got)
	}
	back := map[string]*message.Fetch{}
	for _, q := range e.received(fetchQ) {
		m, err := message.DecodeFetch(q.Body)
		if err != nil || m.URLs != nil {
			t.Fatalf("sent back %s (%v), want a message of one URL", q.Body, err)
		}
		if d := e.send.delays[q.Body]; d <= 0 {
			t.Errorf("%s was sent back with delay %v, want a wait", m.URL, d)
		}
		back[m.URL] = m
	}
	if len(back) != 2 || back[e.url("/busy")] == nil || back[e.url("/old")] == nil {
		t.Fatalf("sent back %v, want /busy and /old alone", back)
	}
	if m := back[e.url("/busy")]; m.Retries != 1 {
		t.Errorf("/busy sent back after %d requests, want 1 (the retry policy's count)", m.Retries)
	}
	for p, want := range map[string]int{"/": 1, "/about": 1, "/busy": 1, "/old": 0} {
		if n := e.site.hitsOf(p); n != want {
			t.Errorf("%s requested %d times, want %d", p, n, want)
		}
	}
	for p, want := range map[string]crawlstate.State{"/": crawlstate.Fetched, "/about": crawlstate.Fetched,
		"/busy": crawlstate.Queued, "/old": crawlstate.Queued} {
		if it := e.item(p); it.State != want {
			t.Errorf("%s = %+v, want %s", p, it, want)
		}
	}
	// The claims the message of several took pass to the URLs sent back alone.
	for _, m := range back {
		if err := e.claimAs(m, "msg-alone"); err != nil {
			t.Errorf("%s sent back alone cannot claim its URL: %v", m.URL, err)
		}
	}
	var pages []string
	for _, m := range e.received(parseQ) {
		pm, err := message.DecodeParse(m.Body)
		if err != nil {
			t.Fatal(err)
		}
		_, ps := pm.PageList()
		for _, p := range ps {
			pages = append(pages, p.URL)
		}
	}
	slices.Sort(pages)
	if want := []string{e.url("/"), e.url("/about")}; !slices.Equal(pages, want) {
		t.Errorf("pages sent to parse = %v, want %v", pages, want)
	}
}

// TestAMessageOfSeveralFailsWholeIfItsFailedURLCannotGoBack: when the failed URL cannot be sent
// back alone, the message fails by its own id, and its redelivery fetches only that URL again.
func TestAMessageOfSeveralFailsWholeIfItsFailedURLCannotGoBack(t *testing.T) {
	e := newEnv(t, nil)
	rec := e.severalURLs("msg-1", "/", "/busy")
	e.send.failFetch = true
	for receive := 1; receive <= 2; receive++ {
		rec.Attributes["ApproximateReceiveCount"] = itoa(receive)
		if got := e.handle(rec); !reflect.DeepEqual(got, []string{"msg-1"}) {
			t.Fatalf("receive %d: BatchItemFailures = %v, want msg-1 whole", receive, got)
		}
		if n, m := e.site.hitsOf("/"), e.site.hitsOf("/busy"); n != 1 || m != receive {
			t.Errorf("receive %d: / requested %d times and /busy %d, want 1 and %d", receive, n, m, receive)
		}
	}
}

// A 429 throttles its host for every worker that books its slots: they are booked further apart
// than the crawl's own rate asks; a 404 or a 503 leaves the host's rate alone.
func TestAnOverloadedHostIsThrottled(t *testing.T) {
	for _, tc := range []struct {
		path      string
		throttled bool
	}{
		{"/missing", false},
		{"/busy", false},     // 503
		{"/slow-down", true}, // 429
	} {
		t.Run(tc.path, func(t *testing.T) {
			e := newEnv(t, func(c *fetcher.Config) { c.MaxQuickRetry = 0 })
			e.handle(e.record("msg-1", tc.path, 1))
			host := strings.TrimPrefix(e.site.srv.URL, "http://")
			// Another store, as another worker's container would see the host's slot item: its
			// first booking learns the throttle, its next one follows it.
			other := crawlstate.New(e.urls)
			const rate = 100 * time.Millisecond
			if _, err := other.ReserveSlots(context.Background(), host, rate, 1, 0); err != nil {
				t.Fatal(err)
			}
			got, err := other.ReserveSlots(context.Background(), host, rate, 2, 0)
			if err != nil {
				t.Fatal(err)
			}
			if throttled := got.Interval > rate; throttled != tc.throttled {
				t.Errorf("after %s, the host's slots are %v apart; throttled = %v, want %v", tc.path, got.Interval, throttled, tc.throttled)
			}
		})
	}
}

// TestACopyThatCameBackForADoneURLEndsBeforeItsSlot: a message re-queued to wait whose URL
// another message has since ended is dropped before it asks for the host's slot: no request, no
// re-queue, though the host is busy (a first send holds its slot and goes to the claim).
func TestACopyThatCameBackForADoneURLEndsBeforeItsSlot(t *testing.T) {
	interval := 100 * time.Second
	e := newEnv(t, func(c *fetcher.Config) { c.HostRPS = float64(time.Second) / float64(interval) })
	ctx := context.Background()
	rec := e.record("msg-2", "/about", 1)
	m, err := message.DecodeFetch(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	key := urlnorm.Key(m.URL)
	if _, err := e.state.Claim(ctx, crawl, key, "msg-1", time.Minute); err != nil {
		t.Fatal(err)
	}
	if ok, err := e.state.Finish(ctx, crawl, key, "msg-1", crawlstate.Queued, crawlstate.Skipped,
		errclass.Errorf(errclass.Robots, "disallowed")); !ok || err != nil {
		t.Fatalf("Finish = %v, %v", ok, err)
	}
	u, _ := url.Parse(e.url("/"))
	if _, err := e.state.ReserveSlot(ctx, u.Host, interval); err != nil {
		t.Fatal(err)
	}
	m.Waits = 1 // it came back from a politeness wait
	if rec.Body, err = message.Encode(m); err != nil {
		t.Fatal(err)
	}
	if got := e.handle(rec); len(got) != 0 {
		t.Errorf("BatchItemFailures = %v, want none: the copy is a duplicate", got)
	}
	if msgs := e.received(fetchQ); len(msgs) != 0 {
		t.Errorf("the copy of a done URL was re-queued %d times, want dropped", len(msgs))
	}
	if n := e.site.hitsOf("/about"); n != 0 {
		t.Errorf("%d requests for a done URL", n)
	}
}

// A batch gives back its turn (`crawl run` lets a spare batch fetch meanwhile) once its pages are
// recorded as fetched and only the WARC file's sync is left, before its parse message goes out:
// the state and the parse queue, seen from inside the call, are the oracle.
func TestTheTurnIsGivenBackOnlyForTheSync(t *testing.T) {
	e := newEnv(t, nil)
	var calls int
	var stateThen crawlstate.State
	parseThen := -1
	ctx := turn.With(context.Background(), func() {
		calls++
		stateThen = e.item("/about").State
		v, nv, err := e.q.Depth(context.Background(), parseQ)
		if err != nil {
			t.Error(err)
		}
		parseThen = v + nv
	})
	resp, err := e.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{e.record("msg-1", "/about", 1)}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle = %v, %v", resp.BatchItemFailures, err)
	}
	if calls == 0 {
		t.Fatal("the handler never gave its turn back")
	}
	if stateThen != crawlstate.Fetched || parseThen != 0 {
		t.Errorf("when the turn was given back: url %s and %d parse messages, want fetched and none", stateThen, parseThen)
	}
	if msgs := e.received(parseQ); len(msgs) != 1 {
		t.Errorf("sent %d parse messages, want 1", len(msgs))
	}
}
