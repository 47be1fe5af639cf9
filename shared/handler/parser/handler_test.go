package parser_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	samples "github.com/crawlstack/crawlstack/events"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/frontier"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/records"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
	"github.com/crawlstack/crawlstack/shared/handler/parser"
	"github.com/crawlstack/crawlstack/shared/handler/quarantine"
	"github.com/crawlstack/crawlstack/shared/handler/sqsbatch"
	"github.com/crawlstack/crawlstack/shared/local/fileblob"
	"github.com/crawlstack/crawlstack/shared/local/handoff"
	"github.com/crawlstack/crawlstack/shared/local/sqlite"
	"github.com/crawlstack/crawlstack/shared/port/queue"
	"github.com/crawlstack/crawlstack/shared/testkit/embedtest"
)

const (
	scheduleQ = "schedule"
	maxDepth  = 3
)

// env is the parse handler on the embedded adapters in a temp dir.
type env struct {
	t     *testing.T
	q     *sqlite.Queue
	blobs *fileblob.Store
	state *crawlstate.Store
	reads *countingBlobs           // what the handler reads and stores through
	send  *failingSender           // where the handler sends links
	gets  *embedtest.CountingTable // the table under state
	cfg   parser.Config
	deps  parser.Deps
	h     *parser.Handler
}

// with builds the env's handler again, with its collaborators as change leaves them.
func (e *env) with(change func(d *parser.Deps)) {
	change(&e.deps)
	e.h = parser.New(e.cfg, e.deps)
}

// countingBlobs counts the handler's ranged reads and fails those that fail says to; while
// failPut is set, it fails every Put.
type countingBlobs struct {
	*fileblob.Store
	mu      sync.Mutex
	calls   int
	fail    func(offset, length int64) bool
	failPut bool
}

func (c *countingBlobs) Put(ctx context.Context, key string, body []byte, contentType string) error {
	c.mu.Lock()
	fail := c.failPut
	c.mu.Unlock()
	if fail {
		return errors.New("injected put failure")
	}
	return c.Store.Put(ctx, key, body, contentType)
}

// failingSender is the queue the handler sends links to; while fail is set, every send fails.
type failingSender struct {
	queue.Sender
	mu   sync.Mutex
	fail bool
}

func (f *failingSender) SendBatch(ctx context.Context, name string, entries []queue.Entry) error {
	f.mu.Lock()
	fail := f.fail
	f.mu.Unlock()
	if fail {
		return errors.New("injected send failure")
	}
	return f.Sender.SendBatch(ctx, name, entries)
}

func (c *countingBlobs) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	c.mu.Lock()
	c.calls++
	fail := c.fail != nil && c.fail(offset, length)
	c.mu.Unlock()
	if fail {
		return nil, errors.New("injected read failure")
	}
	return c.Store.GetRange(ctx, key, offset, length)
}

func newEnv(t *testing.T) *env {
	t.Helper()
	be := embedtest.Open(t, scheduleQ)
	q, blobs := be.Queue, be.Blobs
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	gets := &embedtest.CountingTable{Table: be.Table}
	state := crawlstate.New(gets)
	batch := &sqsbatch.Runner{Quarantine: &quarantine.Store{Blobs: blobs, Source: "parse"}, Log: log}
	reads := &countingBlobs{Store: blobs}
	send := &failingSender{Sender: q}
	cfg := parser.Config{ScheduleQueue: scheduleQ, MaxDepth: maxDepth, UserAgentToken: "crawlstack", Concurrency: 4}
	deps := parser.Deps{Parsed: state, Counters: state, Blobs: reads, Send: send, Batch: batch, Log: log}
	return &env{t: t, q: q, blobs: blobs, state: state, reads: reads, send: send, gets: gets, cfg: cfg, deps: deps, h: parser.New(cfg, deps)}
}

// sample returns the parse sample's record and message; the URL is admitted and fetched.
func (e *env) sample() (events.SQSMessage, *message.Parse) {
	e.t.Helper()
	ev, err := samples.SQS(samples.SQSParse)
	if err != nil {
		e.t.Fatal(err)
	}
	rec := ev.Records[0]
	m, err := message.DecodeParse(rec.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx := context.Background()
	key := urlnorm.Key(m.URL)
	if _, err := e.state.Admit(ctx, m.Crawl, key, m.URL, m.Root, m.Depth, "links"); err != nil {
		e.t.Fatal(err)
	}
	return rec, m
}

// store writes raw at the sample message's WARC key and points the record at it.
func (e *env) store(rec events.SQSMessage, m *message.Parse, raw []byte, depth int) events.SQSMessage {
	e.t.Helper()
	if err := e.blobs.Put(context.Background(), m.WARC.Key, raw, warcfile.ContentType); err != nil {
		e.t.Fatal(err)
	}
	m.WARC.Offset, m.WARC.Length, m.Depth = 0, int64(len(raw)), depth
	body, err := message.Encode(m)
	if err != nil {
		e.t.Fatal(err)
	}
	rec.Body = body
	return rec
}

// warc is a WARC file holding one HTML response.
func warc(t *testing.T, url string, header http.Header, html string) []byte {
	t.Helper()
	h := http.Header{"Content-Type": {"text/html; charset=utf-8"}}
	for k, v := range header {
		h[k] = v
	}
	b, _, err := warcfile.Encode([]warcfile.Page{{URL: url, Status: 200, Header: h, Body: []byte(html),
		FetchedAt: time.Date(2026, 11, 29, 20, 0, 1, 0, time.UTC)}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (e *env) handle(recs ...events.SQSMessage) []string {
	e.t.Helper()
	return embedtest.Failures(e.t, e.h.Handle, recs...)
}

// sent returns the URLs of the links messages on the schedule queue, sorted, checking that each
// names m as its parent.
func (e *env) sent(m *message.Parse) []string {
	e.t.Helper()
	var urls []string
	for _, l := range e.linksMessages() {
		if l.Crawl != m.Crawl || l.Root != m.Root || l.Parent != m.URL || l.Depth != m.Depth+1 {
			e.t.Errorf("links message %+v: want crawl %s, root %s, parent %s, depth %d", l, m.Crawl, m.Root, m.URL, m.Depth+1)
		}
		urls = append(urls, l.URLs...)
	}
	slices.Sort(urls)
	return urls
}

// linksMessages takes every links message off the schedule queue.
func (e *env) linksMessages() []*message.Links {
	e.t.Helper()
	var out []*message.Links
	for {
		msgs, err := e.q.Receive(context.Background(), scheduleQ, queue.MaxBatch, time.Minute, 0)
		if err != nil {
			e.t.Fatal(err)
		}
		if len(msgs) == 0 {
			return out
		}
		for _, qm := range msgs {
			l, err := message.DecodeLinks(qm.Body)
			if err != nil {
				e.t.Fatalf("invalid links message: %v", err)
			}
			out = append(out, l)
		}
	}
}

// records reads every record line of the crawl.
func (e *env) records(crawl string) []records.Record {
	e.t.Helper()
	ctx := context.Background()
	keys, err := e.blobs.List(ctx, records.Dir(crawl))
	if err != nil {
		e.t.Fatal(err)
	}
	var out []records.Record
	for _, k := range keys {
		b, err := e.blobs.Get(ctx, k)
		if err != nil {
			e.t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 16<<20) // a record with its text is longer than the default's 64 KiB
		for sc.Scan() {
			var r records.Record
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				e.t.Fatalf("record line %q: %v", sc.Text(), err)
			}
			out = append(out, r)
		}
		if err := sc.Err(); err != nil {
			e.t.Fatalf("%s: %v", k, err)
		}
	}
	return out
}

const links = `<a href="/about">About</a> <a href="/blog/">Blog</a>`

func TestParsePage(t *testing.T) {
	all := []string{"http://example.test/about", "http://example.test/blog/"}
	cases := []struct {
		name     string
		header   http.Header
		html     string
		depth    int
		sent     []string
		nofollow bool
		outLinks []string
	}{
		{"links are followed", nil, "<title>Home</title>" + links, 0, all, false, all},
		{"meta nofollow sends none", nil, `<title>Home</title><meta name="robots" content="nofollow">` + links,
			0, nil, true, all},
		{"meta nofollow for our token", nil, `<title>Home</title><meta name="crawlstack" content="nofollow">` + links,
			0, nil, true, all},
		{"rel=nofollow links are dropped", nil,
			`<title>Home</title><a href="/about">About</a> <a rel="nofollow" href="/blog/">Blog</a>`,
			0, []string{"http://example.test/about"}, false, all},
		{"X-Robots-Tag nofollow sends none", http.Header{"X-Robots-Tag": {"nofollow"}}, "<title>Home</title>" + links,
			0, nil, true, all},
		{"links below MaxDepth are sent", nil, "<title>Home</title>" + links, maxDepth - 1, all, false, all},
		{"links at MaxDepth are not sent", nil, "<title>Home</title>" + links, maxDepth, nil, false, all},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			rec, m := e.sample()
			rec = e.store(rec, m, warc(t, m.FinalURL, c.header, c.html), c.depth)
			if got := e.handle(rec); len(got) != 0 {
				t.Errorf("BatchItemFailures = %v, want none", got)
			}
			if got := e.sent(m); !reflect.DeepEqual(got, c.sent) {
				t.Errorf("links sent = %v, want %v", got, c.sent)
			}
			recs := e.records(m.Crawl)
			if len(recs) != 1 {
				t.Fatalf("%d records, want 1", len(recs))
			}
			r := recs[0]
			if r.URL != m.URL || r.Title != "Home" || r.NoFollow != c.nofollow || r.Depth != c.depth ||
				!reflect.DeepEqual(r.OutLinks, c.outLinks) || r.Class != "" || r.WARC != m.WARC {
				t.Errorf("record = %+v, want url %s, title Home, nofollow %v, depth %d, outLinks %v", r, m.URL,
					c.nofollow, c.depth, c.outLinks)
			}
			if done, err := e.state.IsMessageParsed(context.Background(), m.Crawl, m.Name()); err != nil || !done {
				t.Errorf("message %s parsed: %v, %v; want marked parsed", m.Name(), done, err)
			}
		})
	}
}

// TestAFailedStoreOrSendIsRetriedWhole: a failure to send the links or to store the records fails
// the message without marking its page parsed, and the redelivery sends the links and stores the
// page's record, once: the links go out first, so a failed send leaves no record behind.
func TestAFailedStoreOrSendIsRetriedWhole(t *testing.T) {
	all := []string{"http://example.test/about", "http://example.test/blog/"}
	for _, c := range []struct {
		name   string
		inject func(e *env, on bool)
	}{
		{"records put fails", func(e *env, on bool) { e.reads.mu.Lock(); e.reads.failPut = on; e.reads.mu.Unlock() }},
		{"links send fails", func(e *env, on bool) { e.send.mu.Lock(); e.send.fail = on; e.send.mu.Unlock() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			rec, m := e.sample()
			rec = e.store(rec, m, warc(t, m.FinalURL, nil, "<title>Home</title>"+links), 0)
			c.inject(e, true)
			if got := e.handle(rec); !reflect.DeepEqual(got, []string{rec.MessageId}) {
				t.Fatalf("with the failure: BatchItemFailures = %v, want [%s]", got, rec.MessageId)
			}
			if done, err := e.state.IsMessageParsed(context.Background(), m.Crawl, m.Name()); err != nil || done {
				t.Errorf("with the failure: message parsed %v, %v; want it not marked", done, err)
			}
			e.sent(m) // whatever went out before the failure
			c.inject(e, false)
			if got := e.handle(rec); len(got) != 0 {
				t.Fatalf("redelivery: BatchItemFailures = %v, want none", got)
			}
			if got := e.sent(m); !reflect.DeepEqual(got, all) {
				t.Errorf("redelivery sent %v, want %v", got, all)
			}
			if done, err := e.state.IsMessageParsed(context.Background(), m.Crawl, m.Name()); err != nil || !done {
				t.Errorf("redelivery: message parsed %v, %v; want marked", done, err)
			}
			if n := len(e.records(m.Crawl)); n != 1 {
				t.Errorf("%d records after the redelivery, want 1", n)
			}
		})
	}
}

func TestDuplicateParseMessageWritesNothing(t *testing.T) {
	e := newEnv(t)
	rec, m := e.sample()
	rec = e.store(rec, m, warc(t, m.FinalURL, nil, "<title>Home</title>"+links), 0)
	if got := e.handle(rec); len(got) != 0 {
		t.Fatalf("first delivery: BatchItemFailures = %v", got)
	}
	e.sent(m)
	again := rec
	again.MessageId = "a-second-copy"
	if got := e.handle(rec, again); len(got) != 0 {
		t.Errorf("duplicates: BatchItemFailures = %v, want none", got)
	}
	if got := e.sent(m); len(got) != 0 {
		t.Errorf("duplicates sent links %v, want none", got)
	}
	if n := len(e.records(m.Crawl)); n != 1 {
		t.Errorf("%d records after duplicates, want 1", n)
	}
}

func TestGarbageWARCRange(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	rec, m := e.sample()
	rec = e.store(rec, m, []byte("this is not a gzipped WARC record at all"), 0)
	if got := e.handle(rec); len(got) != 0 {
		t.Errorf("BatchItemFailures = %v, want none: a page that cannot be parsed is recorded, not retried", got)
	}
	recs := e.records(m.Crawl)
	if len(recs) != 1 || recs[0].Class != errclass.Parse || recs[0].Error == "" || recs[0].URL != m.URL {
		t.Fatalf("records = %+v, want one with class parse and its error", recs)
	}
	c, err := e.state.Counters(ctx, m.Crawl)
	if err != nil {
		t.Fatal(err)
	}
	if c.ParseErrors != 1 || c.Classes[errclass.Parse] != 1 {
		t.Errorf("counters = %+v, want 1 parse error of class parse", c)
	}
	if got := e.sent(m); len(got) != 0 {
		t.Errorf("links sent = %v, want none", got)
	}
	if q, err := e.blobs.List(ctx, quarantine.Prefix); err != nil || len(q) != 0 {
		t.Errorf("quarantined %v (%v): a bad page is not a bad message", q, err)
	}
}

// A parse message whose WARC file is gone (purged, or expired by the lifecycle) is done, not
// retried into the DLQ: its page is recorded with class page_gone, its URL ends failed with that
// class and moves from fetched to failed in the counters (no parse error), and no links go out. A
// second delivery, and one after a failed store, count nothing more.
func TestAPageWhoseFileIsGoneEndsPageGone(t *testing.T) {
	e := newEnv(t)
	e.with(func(d *parser.Deps) { d.Outcomes = e.state })
	ctx := context.Background()
	rec, m := e.sample()
	rec = e.store(rec, m, warc(t, m.FinalURL, nil, "<title>gone</title>"+links), 0)
	key := urlnorm.Key(m.URL)
	if _, err := e.state.Claim(ctx, m.Crawl, key, "fetch-1", time.Minute); err != nil {
		t.Fatal(err)
	}
	if ok, err := e.state.FinishFetched(ctx, m.Crawl, key, "fetch-1", crawlstate.Queued, crawlstate.Page{WARCKey: m.WARC.Key,
		Offset: m.WARC.Offset, Length: m.WARC.Length, FinalURL: m.FinalURL, Status: 200, FetchedAt: m.FetchedAt}); err != nil || !ok {
		t.Fatalf("FinishFetched = %v, %v", ok, err)
	}
	if err := e.blobs.Delete(ctx, m.WARC.Key); err != nil {
		t.Fatal(err)
	}
	e.send.mu.Lock()
	e.send.fail = true // the first delivery stores nothing: its redelivery parses the page again
	e.send.mu.Unlock()
	if got := e.handle(rec); len(got) != 1 {
		t.Fatalf("BatchItemFailures = %v, want the message back after a failed send", got)
	}
	e.send.mu.Lock()
	e.send.fail = false
	e.send.mu.Unlock()
	if got := e.handle(rec); len(got) != 0 {
		t.Errorf("BatchItemFailures = %v, want none: a page that is gone cannot come back", got)
	}
	recs := e.records(m.Crawl)
	if len(recs) != 1 || recs[0].Class != errclass.PageGone || !strings.Contains(recs[0].Error, m.WARC.Key) || recs[0].URL != m.URL {
		t.Fatalf("records = %+v, want one with class page_gone naming the file", recs)
	}
	check := func(when string) {
		t.Helper()
		c, err := e.state.Counters(ctx, m.Crawl)
		if err != nil {
			t.Fatal(err)
		}
		if c.Classes[errclass.PageGone] != 1 || c.Failed != 1 || c.Fetched != 0 || c.ParseErrors != 0 || c.Pending() != 0 {
			t.Errorf("%s: counters = %+v, want 1 failed of class page_gone, none fetched, no parse error, none pending", when, c)
		}
		u, err := e.state.Get(ctx, m.Crawl, key)
		if err != nil || u.State != crawlstate.Failed || u.Class != errclass.PageGone {
			t.Errorf("%s: the URL is %s/%s, %v; want failed, page_gone", when, u.State, u.Class, err)
		}
	}
	check("after the parse")
	if got := e.sent(m); len(got) != 0 {
		t.Errorf("links sent = %v, want none", got)
	}
	// Delivered again, it is a duplicate: nothing more is recorded or counted.
	if got := e.handle(rec); len(got) != 0 || len(e.records(m.Crawl)) != 1 {
		t.Errorf("a second delivery: failures %v, %d records; want none and still 1", got, len(e.records(m.Crawl)))
	}
	check("after a second delivery")
}

// batchOfOneFile stores n pages in one WARC file, as fetch stores a batch, and returns their parse
// messages, each URL admitted. gap puts that many bytes of other pages between the pages.
func (e *env) batchOfOneFile(n, gap int) []events.SQSMessage {
	e.t.Helper()
	rec, m := e.sample()
	var pages []warcfile.Page
	var urls []string
	for i := range n {
		u := m.Root + "page-" + strconv.Itoa(i)
		urls = append(urls, u)
		if i > 0 && gap > 0 {
			pages = append(pages, warcfile.Page{URL: m.Root + "other-" + strconv.Itoa(i), Status: 200,
				Body: noise(gap), FetchedAt: m.FetchedAt})
		}
		pages = append(pages, warcfile.Page{URL: u, Status: 200,
			Header: http.Header{"Content-Type": {"text/html"}}, FetchedAt: m.FetchedAt,
			Body: []byte("<title>Page " + strconv.Itoa(i) + "</title>" + links)})
	}
	raw, spans, err := warcfile.Encode(pages)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.blobs.Put(context.Background(), m.WARC.Key, raw, warcfile.ContentType); err != nil {
		e.t.Fatal(err)
	}
	var recs []events.SQSMessage
	for i, u := range urls {
		at := i
		if gap > 0 {
			at = 2 * i
		}
		pm := *m
		pm.URL, pm.FinalURL = u, u
		pm.WARC.Offset, pm.WARC.Length = spans[at].Offset, spans[at].Length
		if _, err := e.state.Admit(context.Background(), pm.Crawl, urlnorm.Key(u), u, pm.Root, pm.Depth, "links"); err != nil {
			e.t.Fatal(err)
		}
		body, err := message.Encode(pm)
		if err != nil {
			e.t.Fatal(err)
		}
		r := rec
		r.MessageId, r.Body = "msg-"+strconv.Itoa(i), body
		recs = append(recs, r)
	}
	return recs
}

// noise is n bytes that gzip cannot shrink.
func noise(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// titles returns the titles of the crawl's records, sorted, checking that none has an error.
func (e *env) titles(crawl string) []string {
	e.t.Helper()
	var got []string
	for _, r := range e.records(crawl) {
		if r.Error != "" {
			e.t.Errorf("record %s: error %q", r.URL, r.Error)
		}
		got = append(got, r.Title)
	}
	slices.Sort(got)
	return got
}

func TestPagesOfOneWARCFileAreReadTogether(t *testing.T) {
	want := []string{"Page 0", "Page 1", "Page 2", "Page 3", "Page 4"}
	cases := []struct {
		name      string
		gap       int
		fail      func(offset, length int64) bool
		wantReads int
	}{
		{name: "adjacent pages: one read", wantReads: 1},
		{name: "pages far apart: one read each", gap: 100_000, wantReads: 5},
		// The span fails; each page is then read alone and still parsed.
		{name: "shared read fails", fail: func(offset, length int64) bool { return length > 2000 }, wantReads: 6},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.reads.fail = tc.fail
			recs := e.batchOfOneFile(len(want), tc.gap)
			if got := e.handle(recs...); len(got) != 0 {
				t.Fatalf("BatchItemFailures = %v, want none", got)
			}
			if e.reads.calls != tc.wantReads {
				t.Errorf("%d ranged reads, want %d", e.reads.calls, tc.wantReads)
			}
			var m message.Parse
			if err := json.Unmarshal([]byte(recs[0].Body), &m); err != nil {
				t.Fatal(err)
			}
			if got := e.titles(m.Crawl); !slices.Equal(got, want) {
				t.Errorf("titles = %v, want %v", got, want)
			}
		})
	}
}

// TestABatchWritesOneRecordsFile: a batch of 100 pages of one crawl (the stack's parse batch)
// becomes one records file of 100 lines, one S3 PUT, and its pages are read with one ranged GET.
// The file lies in the crawl's partition and the day's (UTC): records/crawl=<crawl>/dt=<date>/,
// as the stack's Glue table projects them.
func TestABatchWritesOneRecordsFile(t *testing.T) {
	e := newEnv(t)
	// 23:30 in New York is the next day in UTC.
	e.with(func(d *parser.Deps) {
		d.Now = func() time.Time { return time.Date(2026, 12, 1, 23, 30, 0, 0, time.FixedZone("EST", -5*3600)) }
	})
	recs := e.batchOfOneFile(100, 0)
	if got := e.handle(recs...); len(got) != 0 {
		t.Fatalf("BatchItemFailures = %v, want none", got)
	}
	var m message.Parse
	if err := json.Unmarshal([]byte(recs[0].Body), &m); err != nil {
		t.Fatal(err)
	}
	keys, err := e.blobs.List(context.Background(), records.Dir(m.Crawl))
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 {
		t.Fatalf("%d records files, want 1 for the batch", len(keys))
	}
	if want := regexp.MustCompile(`^records/crawl=` + regexp.QuoteMeta(m.Crawl) + `/dt=2026-12-02/[a-z0-9]+\.jsonl$`); !want.MatchString(keys[0]) {
		t.Errorf("records file %s, want it to match %s", keys[0], want)
	}
	if n := len(e.titles(m.Crawl)); n != 100 {
		t.Errorf("%d records, want 100", n)
	}
	if e.reads.calls != 1 {
		t.Errorf("%d ranged reads, want 1 for the batch's one WARC file", e.reads.calls)
	}
}

// TestAHandedOverPageParsesAsTheStoredOne parses one page three ways: read from its WARC file, taken
// from a handoff, and with a handoff that does not hold it. All three give the same record and
// links; only the first and the last read the blob store. The record carries the body's digest and
// the response's validators.
func TestAHandedOverPageParsesAsTheStoredOne(t *testing.T) {
	header := http.Header{"X-Robots-Tag": {"noindex"}, "Content-Encoding": {"gzip"}, "Etag": {`W/"v1"`},
		"Last-Modified": {"Tue, 01 Dec 2026 10:00:00 GMT"}}
	html := `<title>Home</title><link rel="canonical" href="/home">` + links
	type outcome struct {
		rec   records.Record
		sent  []string
		reads int
	}
	run := func(offer bool, hand *handoff.Pages) outcome {
		e := newEnv(t)
		rec, m := e.sample()
		rec = e.store(rec, m, warc(t, m.FinalURL, header, html), 0)
		m, err := message.DecodeParse(rec.Body)
		if err != nil {
			t.Fatal(err)
		}
		if offer {
			stored := warcfile.Page{URL: m.FinalURL, Status: 200, Header: http.Header{"Content-Type": {"text/html; charset=utf-8"}},
				Body: []byte(html), FetchedAt: m.FetchedAt}
			maps.Copy(stored.Header, header)
			stored.Header = warcfile.StoredHeader(stored)
			if !hand.Offer(m.WARC, stored) {
				t.Fatal("the handoff refused the page")
			}
		}
		if hand != nil {
			e.with(func(d *parser.Deps) { d.Handoff = hand })
		}
		if got := e.handle(rec); len(got) != 0 {
			t.Fatalf("BatchItemFailures = %v, want none", got)
		}
		recs := e.records(m.Crawl)
		if len(recs) != 1 {
			t.Fatalf("%d records, want 1", len(recs))
		}
		if recs[0].WARC != m.WARC {
			t.Errorf("record points at %+v, want %+v", recs[0].WARC, m.WARC)
		}
		recs[0].WARC = message.Ref{} // each run stores its own file (record ids are random)
		return outcome{rec: recs[0], sent: e.sent(m), reads: e.reads.calls}
	}
	read := run(false, nil)
	if read.reads != 1 || !read.rec.NoIndex || read.rec.Canonical == "" || len(read.sent) != 3 {
		t.Fatalf("read from the blob store: %+v; want one read, noindex, a canonical and three links", read)
	}
	sum := sha256.Sum256([]byte(html))
	if want := "sha256:" + hex.EncodeToString(sum[:]); read.rec.Digest != want || read.rec.ETag != `W/"v1"` ||
		read.rec.LastModified != "Tue, 01 Dec 2026 10:00:00 GMT" {
		t.Errorf("digest %q, etag %q, lastModified %q; want %q and the response's validators",
			read.rec.Digest, read.rec.ETag, read.rec.LastModified, want)
	}
	handed := run(true, handoff.New(0, 0))
	if handed.reads != 0 {
		t.Errorf("a handed-over page was read %d times from the blob store, want 0", handed.reads)
	}
	missed := run(false, handoff.New(0, 0))
	if missed.reads != 1 {
		t.Errorf("a page the handoff lacks was read %d times, want 1", missed.reads)
	}
	for name, o := range map[string]outcome{"handed over": handed, "missed": missed} {
		if !reflect.DeepEqual(o.rec, read.rec) || !reflect.DeepEqual(o.sent, read.sent) {
			t.Errorf("%s: record %+v, links %v; read from the blob store: %+v, %v", name, o.rec, o.sent, read.rec, read.sent)
		}
	}
}

// TestAHandedOverPageNeedsNoDuplicateCheck: a page still in the handoff has never been parsed, so
// its first delivery parses it without reading the table; a second delivery of the same message
// finds nothing in the handoff, reads the table and is dropped as a duplicate.
func TestAHandedOverPageNeedsNoDuplicateCheck(t *testing.T) {
	e := newEnv(t)
	rec, m := e.sample()
	html := "<title>Home</title>" + links
	rec = e.store(rec, m, warc(t, m.FinalURL, nil, html), 0)
	m, err := message.DecodeParse(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	hand := handoff.New(0, 0)
	stored := warcfile.StoredHeader(warcfile.Page{Header: http.Header{"Content-Type": {"text/html; charset=utf-8"}}, Body: []byte(html)})
	if !hand.Offer(m.WARC, warcfile.Page{URL: m.FinalURL, Status: 200, Header: stored, Body: []byte(html), FetchedAt: m.FetchedAt}) {
		t.Fatal("the handoff refused the page")
	}
	e.with(func(d *parser.Deps) { d.Handoff = hand })
	before := e.gets.Reads()
	if got := e.handle(rec); len(got) != 0 {
		t.Fatalf("first delivery: BatchItemFailures = %v", got)
	}
	if n := e.gets.Reads() - before; n != 0 {
		t.Errorf("the first delivery of a handed-over page read %d items, want 0", n)
	}
	e.sent(m)
	again := rec
	again.MessageId = "a-second-copy"
	before = e.gets.Reads()
	if got := e.handle(again); len(got) != 0 {
		t.Fatalf("second delivery: BatchItemFailures = %v", got)
	}
	if n := e.gets.Reads() - before; n == 0 {
		t.Error("the second delivery did not check whether the page was parsed")
	}
	if got := e.sent(m); len(got) != 0 {
		t.Errorf("the second delivery sent links %v, want none", got)
	}
	if n := len(e.records(m.Crawl)); n != 1 {
		t.Errorf("%d records after two deliveries, want 1", n)
	}
	if e.reads.calls != 0 {
		t.Errorf("the blob store was read %d times, want 0 (the duplicate is dropped before its read)", e.reads.calls)
	}
}

// The links of a batch's pages go out packed: one Links message per scope root and depth, each
// link once, with no parent when several pages share it.
func TestABatchsLinksArePackedIntoOneMessage(t *testing.T) {
	e := newEnv(t)
	recs := e.batchOfOneFile(3, 0)
	if got := e.handle(recs...); len(got) != 0 {
		t.Fatalf("failures = %v", got)
	}
	msgs, err := e.q.Receive(context.Background(), scheduleQ, queue.MaxBatch, time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 {
		t.Fatalf("%d links messages for a batch of 3 pages of one root and depth, want 1", len(msgs))
	}
	l, err := message.DecodeLinks(msgs[0].Body)
	if err != nil {
		t.Fatal(err)
	}
	m, err := message.DecodeParse(recs[0].Body)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"http://example.test/about", "http://example.test/blog/"}
	if got := slices.Sorted(slices.Values(l.URLs)); !slices.Equal(got, want) || l.Parent != "" || l.Root != m.Root || l.Depth != m.Depth+1 {
		t.Errorf("links message %+v: want urls %v once each, no parent, root %s, depth %d", l, want, m.Root, m.Depth+1)
	}
}

// A message that names a whole WARC file's pages, as fetch sends one per batch, parses them all
// with one read and one mark, and a second delivery of it writes nothing.
func TestAMessageOfAWholeFile(t *testing.T) {
	e := newEnv(t)
	recs := e.batchOfOneFile(4, 0)
	var pages []message.Page
	var file string
	var m *message.Parse
	for _, r := range recs {
		one, err := message.DecodeParse(r.Body)
		if err != nil {
			t.Fatal(err)
		}
		f, ps := one.PageList()
		file, m = f, one
		pages = append(pages, ps...)
	}
	whole := message.Parse{Header: m.Header, File: file, Pages: pages}
	body, err := message.Encode(whole)
	if err != nil {
		t.Fatal(err)
	}
	rec := recs[0]
	rec.MessageId, rec.Body = "file-msg", body
	if got := e.handle(rec); len(got) != 0 {
		t.Fatalf("BatchItemFailures = %v, want none", got)
	}
	want := []string{"Page 0", "Page 1", "Page 2", "Page 3"}
	if got := e.titles(m.Crawl); !slices.Equal(got, want) || e.reads.calls != 1 {
		t.Errorf("titles %v with %d reads, want %v with one read", got, e.reads.calls, want)
	}
	if done, err := e.state.IsMessageParsed(context.Background(), m.Crawl, whole.Name()); err != nil || !done {
		t.Errorf("message %s marked %v, %v; want marked parsed", whole.Name(), done, err)
	}
	if got := e.handle(rec); len(got) != 0 {
		t.Fatalf("second delivery: BatchItemFailures = %v", got)
	}
	if got := e.titles(m.Crawl); len(got) != len(want) {
		t.Errorf("after a second delivery: %d records, want %d", len(got), len(want))
	}
}

// message is rec carrying m.
func (e *env) message(rec events.SQSMessage, m *message.Parse) events.SQSMessage {
	e.t.Helper()
	body, err := message.Encode(m)
	if err != nil {
		e.t.Fatal(err)
	}
	rec.Body = body
	return rec
}

// The parse marks name the Links messages sent (their frontier.Source): the crawl's end counts
// them left until schedule marks them admitted.
func TestTheMarksNameTheLinksMessagesSent(t *testing.T) {
	e := newEnv(t)
	recs := e.batchOfOneFile(3, 0)
	if got := e.handle(recs...); len(got) != 0 {
		t.Fatalf("failures = %v", got)
	}
	m, err := message.DecodeParse(recs[0].Body)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := e.q.Receive(context.Background(), scheduleQ, queue.MaxBatch, time.Minute, 0)
	if err != nil || len(msgs) == 0 {
		t.Fatalf("received %d links messages, %v; want some", len(msgs), err)
	}
	var names []string
	for _, qm := range msgs {
		l, err := message.DecodeLinks(qm.Body)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, frontier.Source(l))
	}
	ctx := context.Background()
	if _, left, err := e.state.Drained(ctx, m.Crawl); err != nil || left.Links != int64(len(names)) {
		t.Fatalf("Drained left %+v, %v; want the %d links messages sent", left, err, len(names))
	}
	if err := e.state.MarkLinksAdmitted(ctx, m.Crawl, names); err != nil {
		t.Fatal(err)
	}
	if _, left, err := e.state.Drained(ctx, m.Crawl); err != nil || left.Links != 0 {
		t.Fatalf("Drained left %+v, %v once they are admitted; want none", left, err)
	}
}
