package renderer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/records"
	"github.com/crawlstack/crawlstack/shared/crawl/scope"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile/warctest"
	"github.com/crawlstack/crawlstack/shared/handler/parser"
	"github.com/crawlstack/crawlstack/shared/handler/renderer"
	"github.com/crawlstack/crawlstack/shared/handler/renderer/renderertest"
	"github.com/crawlstack/crawlstack/shared/port/queue"
	"github.com/crawlstack/crawlstack/shared/testkit/embedtest"
)

const (
	renderQ   = "render"
	parseQ    = "parse"
	scheduleQ = "schedule"
	crawlID   = "c1"
	site      = "http://127.0.0.1:9/"
)

// crawls is a CrawlSettings of one crawl whose spec has the render section r (nil: none).
type crawls struct{ c *crawlspec.Crawl }

func (c crawls) For(context.Context, string) (*crawlspec.Crawl, error) { return c.c, nil }

func crawlWith(r *crawlspec.Render) crawls {
	return crawls{&crawlspec.Crawl{Rules: scope.DefaultRules(), UserAgent: "crawlstack-test/1",
		Spec: &crawlspec.Settings{Version: 1, Render: r}}}
}

// env is the render handler and the parse handler after it, on the embedded adapters.
type env struct {
	t       *testing.T
	q       queue.Sender
	be      embedtest.Backend
	state   *crawlstate.Store
	browser *renderertest.Browser
	send    *replayingSender
	logs    *syncBuffer
	render  *renderer.Handler
	parse   *parser.Handler
}

// replayingSender sends, and while lose is set, loses the answer: the messages are on the queue,
// and the sender is told the call failed, as when an SDK replays a send whose answer was lost.
type replayingSender struct {
	queue.Sender
	mu   sync.Mutex
	lose bool
}

func (r *replayingSender) SendBatch(ctx context.Context, name string, entries []queue.Entry) error {
	if err := r.Sender.SendBatch(ctx, name, entries); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lose {
		return errors.New("injected: the send was applied and its answer lost")
	}
	return nil
}

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

func newEnv(t *testing.T, r *crawlspec.Render, browser renderer.Browser) *env {
	t.Helper()
	be := embedtest.Open(t, renderQ, parseQ, scheduleQ)
	e := &env{t: t, q: be.Queue, be: be, state: crawlstate.New(be.Table), logs: &syncBuffer{}}
	e.send = &replayingSender{Sender: be.Queue}
	if b, ok := browser.(*renderertest.Browser); ok {
		e.browser = b
	}
	log := slog.New(slog.NewTextHandler(e.logs, nil))
	settings := crawlWith(r)
	e.render = renderer.New(renderer.Config{ParseQueue: parseQ, Concurrency: 2, IndexEachFile: true},
		renderer.Deps{Parsed: e.state, Blobs: be.Blobs, Send: e.send, Crawls: settings, Browser: browser, Log: log})
	e.parse = parser.New(parser.Config{ScheduleQueue: scheduleQ, UserAgentToken: "crawlstack", Concurrency: 2},
		parser.Deps{Parsed: e.state, Counters: e.state, Blobs: be.Blobs, Send: be.Queue, Crawls: settings, Log: log})
	return e
}

// pages are the fetched pages of the tests' site: the first builds its links with scripts, the
// second has them in its HTML, the third is not HTML.
var pages = []struct {
	path, ctype, body string
}{
	{"", "text/html; charset=utf-8", `<html><head><title>App</title></head><body><div id="app" data-render-links="/a /b" data-render-text="built by scripts"></div></body></html>`},
	{"static", "text/html", `<html><body><main>hello</main><a href="/x">x</a><a href="/y">y</a></body></html>`},
	{"data.json", "application/json", `{"a": 1}`},
}

// fetched stores the pages as fetch does, in one WARC file with its index, and returns the parse
// message fetch sends for them.
func (e *env) fetched() message.Parse {
	e.t.Helper()
	at := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	var recs []warcfile.Record
	for _, p := range pages {
		r, err := warcfile.EncodeRecord(warcfile.Page{URL: site + p.path, Status: 200, Header: map[string][]string{"Content-Type": {p.ctype}},
			Body: []byte(p.body), FetchedAt: at, Request: map[string][]string{"User-Agent": {"crawlstack-test/1"}}})
		if err != nil {
			e.t.Fatal(err)
		}
		recs = append(recs, r)
	}
	key := "pages/" + crawlID + "/2026/12/05/f.warc.gz"
	f, err := warcfile.Assemble("f.warc.gz", at, recs)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx := context.Background()
	if err := e.be.Blobs.Put(ctx, key, f.Data, warcfile.ContentType); err != nil {
		e.t.Fatal(err)
	}
	if err := e.be.Blobs.Put(ctx, key+warcfile.IndexSuffix, f.Index, warcfile.IndexContentType); err != nil {
		e.t.Fatal(err)
	}
	m := message.Parse{Header: message.Header{Crawl: crawlID}, File: key}
	for i, p := range pages {
		m.Pages = append(m.Pages, message.Page{URL: site + p.path, FinalURL: site + p.path, Root: site, Depth: 0, Status: 200,
			ContentType: p.ctype, FetchedAt: at, Offset: f.Spans[i].Offset, Length: f.Spans[i].Length})
	}
	return m
}

func rec(t *testing.T, id string, m message.Parse) events.SQSMessage {
	t.Helper()
	body, err := message.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	return events.SQSMessage{MessageId: id, Body: body, Attributes: map[string]string{"ApproximateReceiveCount": "1"}}
}

// drain receives every message on name as SQS records, deleting them.
func (e *env) drain(name string) []events.SQSMessage {
	e.t.Helper()
	var out []events.SQSMessage
	for {
		msgs, err := e.be.Queue.Receive(context.Background(), name, queue.MaxBatch, time.Minute, 0)
		if err != nil {
			e.t.Fatal(err)
		}
		if len(msgs) == 0 {
			return out
		}
		for _, m := range msgs {
			out = append(out, events.SQSMessage{MessageId: m.ID, Body: m.Body, Attributes: map[string]string{"ApproximateReceiveCount": "1"}})
			if err := e.be.Queue.Delete(context.Background(), name, m.ReceiptHandle); err != nil {
				e.t.Fatal(err)
			}
		}
	}
}

// records are the records parse stored, by URL, each once: two of one URL fail the test.
func (e *env) records() map[string]records.Record {
	e.t.Helper()
	out := map[string]records.Record{}
	keys, err := e.be.Blobs.List(context.Background(), "records/")
	if err != nil {
		e.t.Fatal(err)
	}
	for _, k := range keys {
		body, err := e.be.Blobs.Get(context.Background(), k)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(body)), "\n") {
			var r records.Record
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				e.t.Fatal(err)
			}
			if _, dup := out[r.URL]; dup {
				e.t.Errorf("%s parsed twice", r.URL)
			}
			out[r.URL] = r
		}
	}
	return out
}

// TestRenderedPagesReachParseWithTheirDOM: a page whose static HTML has fewer links than
// when_fewer_links renders, and parse reads its links, title and main text from the rendered DOM;
// a page with links enough and a page that is not HTML go through unrendered; the forwarded
// message has the name of the one fetch sent; the render step's WARC file passes warcio.js, each
// conversion record resolving to its response in fetch's file.
func TestRenderedPagesReachParseWithTheirDOM(t *testing.T) {
	browser := &renderertest.Browser{}
	e := newEnv(t, &crawlspec.Render{WhenFewerLinks: 2}, browser)
	m := e.fetched()
	if got := embedtest.Failures(t, e.render.Handle, rec(t, "r1", m)); len(got) != 0 {
		t.Fatalf("render failures %v", got)
	}
	if got, want := browser.Pages(), []string{site}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("rendered %v, want %v", got, want)
	}
	fwd := e.drain(parseQ)
	if len(fwd) != 1 {
		t.Fatalf("%d messages to parse, want 1", len(fwd))
	}
	got, err := message.DecodeParse(fwd[0].Body)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name() != m.Name() || len(got.Pages) != len(m.Pages) {
		t.Fatalf("forwarded %s with %d pages, want %s with %d", got.Name(), len(got.Pages), m.Name(), len(m.Pages))
	}
	if got.Pages[0].Rendered == nil || got.Pages[1].Rendered != nil || got.Pages[2].Rendered != nil {
		t.Errorf("rendered refs %v %v %v, want the first page's only", got.Pages[0].Rendered, got.Pages[1].Rendered, got.Pages[2].Rendered)
	}
	if got := embedtest.Failures(t, e.parse.Handle, fwd...); len(got) != 0 {
		t.Fatalf("parse failures %v", got)
	}
	recs := e.records()
	app := recs[site]
	if !app.Rendered || app.Title != "App" || strings.Join(app.OutLinks, " ") != site+"a "+site+"b" {
		t.Errorf("the app page's record: rendered %v, title %q, links %v; want rendered, App, its script-built links", app.Rendered, app.Title, app.OutLinks)
	}
	if st := recs[site+"static"]; st.Rendered || len(st.OutLinks) != 2 || st.RenderError != "" {
		t.Errorf("the static page's record: rendered %v, links %v, %q", st.Rendered, st.OutLinks, st.RenderError)
	}
	if js := recs[site+"data.json"]; js.Rendered {
		t.Error("a JSON page rendered")
	}
	// The independent reader: both files, each conversion naming its response.
	dir := t.TempDir()
	var files []string
	for _, key := range []string{m.File, got.Pages[0].Rendered.Key} {
		for _, k := range []string{key, key + warcfile.IndexSuffix} {
			b, err := e.be.Blobs.Get(context.Background(), k)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, filepath.Base(k)), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		files = append(files, filepath.Join(dir, filepath.Base(key)))
	}
	sum := warctest.Check(t, files...)
	want := warctest.Summary{Files: 2, Records: 9, Warcinfo: 2, Responses: 3, Requests: 3, Conversions: 1, IndexLines: 4, Resolved: 4,
		ConversionsResolved: 1}
	if sum != want {
		t.Errorf("warcio.js saw %+v, want %+v", sum, want)
	}
}

// TestNoBrowserSaysSoAndLosesNothing: without a browser, a page that was to render is parsed from
// its static HTML, its record says render/no-browser, and the log says so once for the batch.
func TestNoBrowserSaysSoAndLosesNothing(t *testing.T) {
	e := newEnv(t, &crawlspec.Render{Patterns: []string{"."}}, renderer.NoBrowser{Reason: "none installed"})
	m := e.fetched()
	if got := embedtest.Failures(t, e.render.Handle, rec(t, "r1", m)); len(got) != 0 {
		t.Fatalf("render failures %v", got)
	}
	if got := embedtest.Failures(t, e.parse.Handle, e.drain(parseQ)...); len(got) != 0 {
		t.Fatalf("parse failures %v", got)
	}
	recs := e.records()
	if len(recs) != len(pages) {
		t.Fatalf("%d records, want %d", len(recs), len(pages))
	}
	for _, u := range []string{site, site + "static"} {
		if r := recs[u]; r.Rendered || r.RenderError != renderer.ErrNoBrowserReason {
			t.Errorf("%s: rendered %v, renderError %q; want %q", u, r.Rendered, r.RenderError, renderer.ErrNoBrowserReason)
		}
	}
	if r := recs[site+"static"]; len(r.OutLinks) != 2 {
		t.Errorf("the static page's links %v: not parsed from its HTML", r.OutLinks)
	}
	if n := strings.Count(e.logs.String(), `msg="no browser`); n != 1 {
		t.Errorf("the log says \"no browser\" %d times, want once:\n%s", n, e.logs.String())
	}
	if !strings.Contains(e.logs.String(), "none installed") {
		t.Errorf("the log does not say why:\n%s", e.logs.String())
	}
}

// TestRenderSendsSurviveReplaysAndDuplicates: the render step's message delivered twice in one
// batch, and its send to parse applied with its answer lost (so the message is delivered and
// rendered again, and parse gets two copies), still parse each page once; once parse has the
// message, a late copy of it is dropped without rendering.
func TestRenderSendsSurviveReplaysAndDuplicates(t *testing.T) {
	browser := &renderertest.Browser{}
	e := newEnv(t, &crawlspec.Render{Patterns: []string{"."}}, browser)
	m := e.fetched()
	r := rec(t, "r1", m)
	dup := r
	dup.MessageId = "r1-copy"
	e.send.lose = true
	if got := embedtest.Failures(t, e.render.Handle, r, dup); len(got) != 2 {
		t.Fatalf("with the answer lost, failures %v, want both copies back", got)
	}
	e.send.lose = false
	if got := embedtest.Failures(t, e.render.Handle, r); len(got) != 0 {
		t.Fatalf("render failures %v", got)
	}
	fwd := e.drain(parseQ)
	if len(fwd) != 3 {
		t.Fatalf("%d messages to parse, want 3 (two sends whose answer was lost, one that was not)", len(fwd))
	}
	for _, f := range fwd {
		if got := embedtest.Failures(t, e.parse.Handle, f); len(got) != 0 {
			t.Fatalf("parse failures %v", got)
		}
	}
	recs := e.records() // fails on a page parsed twice
	if len(recs) != len(pages) {
		t.Errorf("%d records, want %d", len(recs), len(pages))
	}
	if !recs[site].Rendered {
		t.Error("the app page is not rendered")
	}
	before := browser.Renders.Load()
	if got := embedtest.Failures(t, e.render.Handle, r); len(got) != 0 {
		t.Fatalf("render failures %v", got)
	}
	if browser.Renders.Load() != before || len(e.drain(parseQ)) != 0 {
		t.Error("a copy of a message parse has done was rendered and forwarded again")
	}
}

// TestACrawlWithoutRenderGoesThroughAsItCame: a message of a crawl whose spec has no render
// section reaches parse byte for byte as fetch sent it, and nothing renders.
func TestACrawlWithoutRenderGoesThroughAsItCame(t *testing.T) {
	browser := &renderertest.Browser{}
	e := newEnv(t, nil, browser)
	r := rec(t, "r1", e.fetched())
	if got := embedtest.Failures(t, e.render.Handle, r); len(got) != 0 {
		t.Fatalf("render failures %v", got)
	}
	fwd := e.drain(parseQ)
	if len(fwd) != 1 || fwd[0].Body != r.Body || browser.Renders.Load() != 0 {
		t.Errorf("forwarded %d messages, rendered %d pages; want the message as it came, none rendered", len(fwd), browser.Renders.Load())
	}
}

// TestABrowserFailureParsesTheStaticHTML: a page the browser fails on is parsed from its static
// HTML with render/failed, and a render cut by the invocation's end fails the message instead.
func TestABrowserFailureParsesTheStaticHTML(t *testing.T) {
	e := newEnv(t, &crawlspec.Render{Patterns: []string{"."}}, &renderertest.Browser{Err: fmt.Errorf("page crashed")})
	if got := embedtest.Failures(t, e.render.Handle, rec(t, "r1", e.fetched())); len(got) != 0 {
		t.Fatalf("render failures %v", got)
	}
	if got := embedtest.Failures(t, e.parse.Handle, e.drain(parseQ)...); len(got) != 0 {
		t.Fatalf("parse failures %v", got)
	}
	if r := e.records()[site]; r.Rendered || r.RenderError != renderer.ErrFailedReason {
		t.Errorf("rendered %v, renderError %q; want %q", r.Rendered, r.RenderError, renderer.ErrFailedReason)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	resp, err := e.render.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{rec(t, "r2", e.fetched())}})
	if err != nil || len(resp.BatchItemFailures) != 1 {
		t.Errorf("a cancelled render: %v, failures %v; want the message back", err, resp.BatchItemFailures)
	}
}
