package scheduler_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	samples "github.com/crawlstack/crawlstack/events"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/frontier"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/scope"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/handler/quarantine"
	"github.com/crawlstack/crawlstack/shared/handler/scheduler"
	"github.com/crawlstack/crawlstack/shared/handler/sqsbatch"
	"github.com/crawlstack/crawlstack/shared/local/fileblob"
	"github.com/crawlstack/crawlstack/shared/local/sqlite"
	"github.com/crawlstack/crawlstack/shared/port/queue"
	"github.com/crawlstack/crawlstack/shared/port/table"
	"github.com/crawlstack/crawlstack/shared/testkit/embedtest"
)

const (
	scheduleQ = "schedule"
	fetchQ    = "fetch"
)

// env is the schedule handler on the embedded adapters in a temp dir.
type env struct {
	t     *testing.T
	q     *sqlite.Queue
	blobs *fileblob.Store
	state *crawlstate.Store
	h     *scheduler.Handler
	logs  *syncBuffer // the handler's log, text lines at Info and above
}

// syncBuffer is a bytes.Buffer that the handler's workers may write at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// frontierDeps gives d the crawl state s for each of the capabilities a frontier takes of it.
func frontierDeps(s *crawlstate.Store, d frontier.Deps) frontier.Deps {
	d.Admissions, d.Skips, d.Gates, d.PageBudget, d.Counters, d.Slots, d.Starts = s, s, s, s, s, s, s
	return d
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, nil)
}

// newEnvWith is newEnv with deps changed by with (nil: none).
func newEnvWith(t *testing.T, with func(*scheduler.Deps)) *env {
	t.Helper()
	be := embedtest.Open(t, scheduleQ, fetchQ)
	q, blobs := be.Queue, be.Blobs
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	state := crawlstate.New(be.Table)
	front := frontier.New(frontier.Config{Rules: scope.DefaultRules(), FetchQueue: fetchQ}, frontierDeps(state, frontier.Deps{Send: q, Log: log}))
	batch := &sqsbatch.Runner{Quarantine: &quarantine.Store{Blobs: blobs, Source: "schedule"}, Log: log}
	d := scheduler.Deps{Admit: front, Starts: front, Blobs: blobs, Send: q, Batch: batch, Log: log, Links: state}
	if with != nil {
		with(&d)
	}
	h := scheduler.New(scheduler.Config{ScheduleQueue: scheduleQ, Concurrency: 4}, d)
	return &env{t: t, q: q, blobs: blobs, state: state, h: h, logs: logs}
}

func (e *env) put(key, body string) {
	e.t.Helper()
	if err := e.blobs.Put(context.Background(), key, []byte(body), "text/plain"); err != nil {
		e.t.Fatal(err)
	}
}

// drain receives every visible message of the queue (the handler sends before it returns).
func (e *env) drain(name string) []string {
	e.t.Helper()
	var bodies []string
	for {
		msgs, err := e.q.Receive(context.Background(), name, queue.MaxBatch, time.Minute, 0)
		if err != nil {
			e.t.Fatal(err)
		}
		if len(msgs) == 0 {
			return bodies
		}
		for _, m := range msgs {
			bodies = append(bodies, m.Body)
		}
	}
}

// links decodes the schedule queue's messages and returns their crawls and URLs.
func (e *env) links() (crawls map[string][]string, depths []int) {
	e.t.Helper()
	crawls = map[string][]string{}
	for _, b := range e.drain(scheduleQ) {
		m, err := message.DecodeLinks(b)
		if err != nil {
			e.t.Fatalf("schedule queue holds an invalid links message: %v", err)
		}
		crawls[m.Crawl] = append(crawls[m.Crawl], m.URLs...)
		depths = append(depths, m.Depth)
	}
	for _, urls := range crawls {
		slices.Sort(urls)
	}
	return crawls, depths
}

func sample(t *testing.T, name string) []byte {
	t.Helper()
	b, err := samples.Read(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sqsSample(t *testing.T, name string) events.SQSEvent {
	t.Helper()
	ev, err := samples.SQS(name)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func failures(resp events.SQSEventResponse) []string {
	ids := []string{}
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

const seedFile = "# my seeds\nhttp://example.test/\nnot a url\nhttp://example.test/blog/\nftp://example.test/file\n"

func TestSeedFileNotification(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.put("seeds/my seeds.txt", seedFile) // S3 sends the key as seeds/my+seeds.txt
	out, err := e.h.Invoke(ctx, sample(t, samples.S3PutSeed))
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	resp, ok := out.(events.SQSEventResponse)
	if !ok {
		t.Fatalf("Invoke returned %T, want events.SQSEventResponse", out)
	}
	if got := failures(resp); len(got) != 0 {
		t.Errorf("BatchItemFailures = %v, want none", got)
	}
	crawl := scheduler.CrawlID("crawlstack-crawl", "seeds/my seeds.txt", "0065670E2A6F5F7B38")
	crawls, depths := e.links()
	want := map[string][]string{crawl: {"http://example.test/", "http://example.test/blog/"}}
	if !reflect.DeepEqual(crawls, want) {
		t.Errorf("links sent = %v, want %v", crawls, want)
	}
	for _, d := range depths {
		if d != 0 {
			t.Errorf("a seed links message has depth %d, want 0", d)
		}
	}
	raw, err := e.blobs.Get(ctx, scheduler.ReportsPrefix+crawl+"/seeds.json")
	if err != nil {
		t.Fatalf("seed report: %v", err)
	}
	var rep scheduler.SeedReport
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	var bad []int
	for _, b := range rep.Bad {
		bad = append(bad, b.Line)
		if b.Text == "" || b.Error == "" {
			t.Errorf("bad line %d has no text or no error: %+v", b.Line, b)
		}
	}
	if rep.Crawl != crawl || rep.SeedFile != "seeds/my seeds.txt" || rep.Accepted != 2 || rep.Errors != 2 ||
		!reflect.DeepEqual(bad, []int{3, 5}) {
		t.Errorf("report = %+v (bad lines %v), want crawl %s, seeds/my seeds.txt, 2 accepted, bad lines [3 5]", rep, bad, crawl)
	}
}

func TestSeedFileMissingIsRetried(t *testing.T) {
	e := newEnv(t) // no seed file: S3 said it exists, so the read failing is transient
	ev := sqsSample(t, samples.S3PutSeed)
	resp, err := e.h.Handle(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := failures(resp), []string{ev.Records[0].MessageId}; !reflect.DeepEqual(got, want) {
		t.Errorf("BatchItemFailures = %v, want %v", got, want)
	}
	if q := e.quarantined(); len(q) != 0 {
		t.Errorf("quarantined %v, want nothing", q)
	}
}

func (e *env) quarantined() []quarantine.Entry {
	e.t.Helper()
	keys, err := e.blobs.List(context.Background(), quarantine.Prefix+"schedule/")
	if err != nil {
		e.t.Fatal(err)
	}
	var out []quarantine.Entry
	for _, k := range keys {
		b, err := e.blobs.Get(context.Background(), k)
		if err != nil {
			e.t.Fatal(err)
		}
		var q quarantine.Entry
		if err := json.Unmarshal(b, &q); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, q)
	}
	return out
}

func TestS3TestEventIsAcknowledged(t *testing.T) {
	e := newEnv(t)
	resp, err := e.h.Handle(context.Background(), sqsSample(t, samples.S3TestEvent))
	if err != nil {
		t.Fatal(err)
	}
	if got := failures(resp); len(got) != 0 {
		t.Errorf("BatchItemFailures = %v, want none", got)
	}
	if q := e.quarantined(); len(q) != 0 {
		t.Errorf("the test event was quarantined: %+v", q)
	}
	if b := e.drain(scheduleQ); len(b) != 0 {
		t.Errorf("sent %v, want nothing", b)
	}
}

func TestLinksBatch(t *testing.T) {
	cases := []struct {
		file       string
		poison     []string // message ids to quarantine
		wantFetch  []string
		wantReject int
	}{
		{samples.SQSLinks, nil,
			[]string{"http://example.test/", "http://example.test/about", "http://example.test/blog/",
				"http://example.test/blog/first-post"}, 1},
		{samples.SQSLinksWithPoison, []string{"9e4b2a7c-5d1f-4c8e-b6a3-1f0d2e9c7b02"},
			[]string{"http://example.test/", "http://example.test/about", "http://example.test/blog/",
				"http://example.test/blog/first-post"}, 1},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			ev := sqsSample(t, c.file)
			resp, err := e.h.Handle(ctx, ev)
			if err != nil {
				t.Fatal(err)
			}
			if got := failures(resp); len(got) != 0 {
				t.Errorf("BatchItemFailures = %v, want none", got)
			}
			var ids []string
			for _, q := range e.quarantined() {
				ids = append(ids, q.MessageID)
				if q.Source != "schedule" || q.Reason == "" || q.Body == "" || q.Class != "poison" {
					t.Errorf("quarantine entry = %+v, want source schedule, class poison, a reason and the body", q)
				}
			}
			if !reflect.DeepEqual(ids, c.poison) {
				t.Errorf("quarantined %v, want %v", ids, c.poison)
			}
			var fetched []string
			for _, b := range e.drain(fetchQ) {
				m, err := message.DecodeFetch(b)
				if err != nil {
					t.Fatal(err)
				}
				fetched = append(fetched, m.URLList()...)
			}
			slices.Sort(fetched)
			if !reflect.DeepEqual(fetched, c.wantFetch) {
				t.Errorf("fetch messages for %v, want %v", fetched, c.wantFetch)
			}
			// other.test is out of the host scope of the seed http://example.test/: not fetched,
			// and not recorded either, since another seed's page may bring it in.
			u, err := urlnorm.Normalize("http://other.test/elsewhere")
			if err != nil {
				t.Fatal(err)
			}
			if it, err := e.state.Get(ctx, "my-seeds-25f56f7b9ed9", urlnorm.Key(u.String())); !errors.Is(err, table.ErrNotFound) {
				t.Errorf("out-of-scope link = %+v, %v; want no item", it, err)
			}
		})
	}
}

func TestTickStartsOneCrawlPerSeedFile(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.put("seeds/a.txt", "http://a.example.test/\n")
	e.put("seeds/b.txt", "http://b.example.test/\nhttp://b.example.test/x\n")
	e.put("other/c.txt", "http://c.example.test/\n") // not under the re-crawl prefix
	out, err := e.h.Invoke(ctx, sample(t, samples.EventBridgeTick))
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	if out != nil {
		t.Errorf("Invoke returned %v, want nil for an EventBridge event", out)
	}
	tick := "tick@2026-11-30T03:00:00Z"
	crawlA, crawlB := scheduler.CrawlID("", "seeds/a.txt", tick), scheduler.CrawlID("", "seeds/b.txt", tick)
	crawls, _ := e.links()
	want := map[string][]string{crawlA: {"http://a.example.test/"}, crawlB: {"http://b.example.test/", "http://b.example.test/x"}}
	if !reflect.DeepEqual(crawls, want) {
		t.Errorf("links sent = %v, want %v", crawls, want)
	}
	for _, c := range []string{crawlA, crawlB} {
		if _, err := e.blobs.Get(ctx, scheduler.ReportsPrefix+c+"/seeds.json"); err != nil {
			t.Errorf("seed report of %s: %v", c, err)
		}
		// The crawl's start is on record: its items expire, and its admissions end, from then.
		if start, err := e.state.Started(ctx, c); err != nil || start.IsZero() {
			t.Errorf("start of %s = %v, %v; want it recorded", c, start, err)
		}
	}
}

func TestInvokeUnrecognisedEvent(t *testing.T) {
	cases := []struct{ name, event string }{
		{"not JSON", `{"Records": [`},
		{"an API Gateway request", `{"httpMethod": "GET", "path": "/"}`},
		{"records of another source", `{"Records": [{"eventSource": "aws:dynamodb"}]}`},
		{"no records", `{"Records": []}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			out, err := e.h.Invoke(context.Background(), json.RawMessage(c.event))
			if err == nil || !strings.Contains(err.Error(), "unrecognised event") {
				t.Errorf("Invoke = %v, %v; want an unrecognised event error", out, err)
			}
		})
	}
}

// A seed file over the limit is refused from the event's size, before it is read into memory.
// A seed file of thousands of bad lines logs the first MaxLoggedBadLines of them, one line each,
// and counts the rest: the "crawl started" line and the report give the count, the report lists
// the first 1,000, and the good lines are all sent.
func TestBadSeedLinesAreSampledInTheLog(t *testing.T) {
	e := newEnv(t)
	const bad, good = 5000, 5
	var b strings.Builder
	for i := range bad {
		fmt.Fprintf(&b, "not a url %d\n", i)
		if i%1000 == 0 {
			fmt.Fprintf(&b, "http://example.test/%d\n", i)
		}
	}
	e.put("seeds/bad.txt", b.String())
	if err := e.h.StartCrawl(context.Background(), "seeds/bad.txt", "c"); err != nil {
		t.Fatal(err)
	}
	logs := e.logs.String()
	if n := strings.Count(logs, "bad seed line"); n != scheduler.MaxLoggedBadLines {
		t.Errorf("%d bad seed lines logged, want %d", n, scheduler.MaxLoggedBadLines)
	}
	if want := fmt.Sprintf("badLines=%d badLinesNotLogged=%d", bad, bad-scheduler.MaxLoggedBadLines); !strings.Contains(logs, want) {
		t.Errorf("the log does not say %q:\n%s", want, logs)
	}
	raw, err := e.blobs.Get(context.Background(), scheduler.ReportsPrefix+"c/seeds.json")
	if err != nil {
		t.Fatal(err)
	}
	var r scheduler.SeedReport
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	if r.Errors != bad || len(r.Bad) != r.Limits.MaxReports || r.Limits.MaxLogged != scheduler.MaxLoggedBadLines || r.Accepted != good {
		t.Errorf("report: %d errors, %d listed, limits %+v, %d accepted; want %d, %d, %d logged, %d",
			r.Errors, len(r.Bad), r.Limits, r.Accepted, bad, r.Limits.MaxReports, scheduler.MaxLoggedBadLines, good)
	}
}

func TestOversizeSeedFileIsReportedNotRead(t *testing.T) {
	e := newEnv(t) // no seed file stored: reading it would fail the record
	ev := sqsSample(t, samples.S3PutSeed)
	var s3ev events.S3Event
	if err := json.Unmarshal([]byte(ev.Records[0].Body), &s3ev); err != nil {
		t.Fatal(err)
	}
	s3ev.Records[0].S3.Object.Size = scheduler.MaxSeedBytes + 1
	body, err := json.Marshal(s3ev)
	if err != nil {
		t.Fatal(err)
	}
	ev.Records[0].Body = string(body)
	resp, err := e.h.Handle(context.Background(), ev)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle = %v, %v; want the record done", resp.BatchItemFailures, err)
	}
	keys, err := e.blobs.List(context.Background(), scheduler.ReportsPrefix)
	if err != nil || len(keys) != 1 {
		t.Fatalf("reports = %v, %v", keys, err)
	}
	report, err := e.blobs.Get(context.Background(), keys[0])
	if err != nil || !strings.Contains(string(report), "over the") {
		t.Errorf("the report does not say the file is too big: %s (%v)", report, err)
	}
	if got := e.drain(scheduleQ); len(got) != 0 {
		t.Errorf("an oversize seed file sent %d links messages", len(got))
	}
}

// TestRecordsThatAreNotLinksAreQuarantinedWithTheirReason: a body that is not JSON, a message of
// another kind and an object of no known shape are each quarantined, saying why, while a Links
// message in the same batch is admitted.
func TestRecordsThatAreNotLinksAreQuarantinedWithTheirReason(t *testing.T) {
	e := newEnv(t)
	good, err := message.Encode(message.Links{Header: message.Header{Crawl: "c1"}, URLs: []string{"http://example.test/"}})
	if err != nil {
		t.Fatal(err)
	}
	fetch, err := message.Encode(message.Fetch{Header: message.Header{Crawl: "c1"}, Target: message.Target{URL: "http://example.test/"}})
	if err != nil {
		t.Fatal(err)
	}
	bodies := map[string]string{"good": good, "not-json": "links, please", "fetch-kind": fetch, "unknown": `{"hello":"world"}`}
	var ev events.SQSEvent
	for id, body := range bodies {
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: id, Body: body,
			Attributes: map[string]string{"ApproximateReceiveCount": "1"}})
	}
	resp, err := e.h.Handle(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if got := failures(resp); len(got) != 0 {
		t.Errorf("BatchItemFailures = %v, want none", got)
	}
	reasons := map[string]string{}
	for _, q := range e.quarantined() {
		reasons[q.MessageID] = q.Reason
	}
	want := map[string]string{"not-json": "not a JSON message", "fetch-kind": "fetch", "unknown": "schema version"}
	for id, part := range want {
		if !strings.Contains(reasons[id], part) {
			t.Errorf("%s: quarantined with reason %q, want one that mentions %q", id, reasons[id], part)
		}
	}
	if len(reasons) != len(want) {
		t.Errorf("quarantined %v, want exactly %v", reasons, want)
	}
	if sent := e.drain(fetchQ); len(sent) != 1 {
		t.Errorf("%d fetch messages, want 1 (for the good record)", len(sent))
	}
}

// failingSender fails every send while fail is set.
type failingSender struct {
	queue.Sender
	fail atomic.Bool
}

func (s *failingSender) SendBatch(ctx context.Context, name string, entries []queue.Entry) error {
	if s.fail.Load() {
		return errors.New("throttled")
	}
	return s.Sender.SendBatch(ctx, name, entries)
}

// TestABatchSendsItsFetchMessagesTogether: the URLs that a batch's Links messages admit (here one
// host each, as a wide crawl's come) go out in one fetch message; when that send fails, every
// message whose URLs it held fails, and their redelivery sends them.
func TestABatchSendsItsFetchMessagesTogether(t *testing.T) {
	be := embedtest.Open(t, scheduleQ, fetchQ)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	snd := &failingSender{Sender: be.Queue}
	front := frontier.New(frontier.Config{Rules: scope.DefaultRules(), FetchQueue: fetchQ}, frontierDeps(crawlstate.New(be.Table), frontier.Deps{Send: snd, Log: log}))
	h := scheduler.New(scheduler.Config{ScheduleQueue: scheduleQ, Concurrency: 4},
		scheduler.Deps{Admit: front, Starts: front, Blobs: be.Blobs, Send: be.Queue, Log: log})
	e := &env{t: t, q: be.Queue}
	var ev events.SQSEvent
	hosts := []string{"http://a.test/", "http://b.test/", "http://c.test/"}
	for i, u := range hosts {
		body, err := message.Encode(message.Links{Header: message.Header{Crawl: "c1"}, URLs: []string{u}})
		if err != nil {
			t.Fatal(err)
		}
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: "m" + strconv.Itoa(i), Body: body,
			Attributes: map[string]string{"ApproximateReceiveCount": "1"}})
	}
	snd.fail.Store(true)
	resp, err := h.Handle(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	got := failures(resp)
	slices.Sort(got)
	if !slices.Equal(got, []string{"m0", "m1", "m2"}) {
		t.Errorf("with the send failing, failed records = %v, want all three", got)
	}
	if got := e.drain(fetchQ); len(got) != 0 {
		t.Fatalf("a failed send left %d fetch messages", len(got))
	}
	snd.fail.Store(false)
	if resp, err = h.Handle(context.Background(), ev); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("redelivery: %v, %v; want no failure", resp.BatchItemFailures, err)
	}
	got = e.drain(fetchQ)
	if len(got) != 1 {
		t.Fatalf("%d fetch messages, want one for the batch's three URLs", len(got))
	}
	m, err := message.DecodeFetch(got[0])
	if err != nil {
		t.Fatal(err)
	}
	urls := m.URLList()
	slices.Sort(urls)
	if !slices.Equal(urls, hosts) {
		t.Errorf("the fetch message holds %v, want %v", urls, hosts)
	}
}
