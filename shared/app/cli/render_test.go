package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/app/pipeline"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/handler/renderer/renderertest"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// jsSite serves a site whose links exist only once its scripts run: the fake browser
// (renderertest) builds them from data-render-links. "/" links to /a and /b; /a to /c.
func jsSite(t *testing.T) *httptest.Server {
	t.Helper()
	pages := map[string]string{
		"/":  `<html><head><title>Home</title></head><body><div id="app" data-render-links="/a /b"></div></body></html>`,
		"/a": `<html><head><title>A</title></head><body><div id="app" data-render-links="/c"></div></body></html>`,
		"/b": `<html><head><title>B</title></head><body><div id="app" data-render-text="b, built by scripts"></div></body></html>`,
		"/c": `<html><head><title>C</title></head><body><div id="app"></div></body></html>`,
	}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, body)
	}))
	t.Cleanup(s.Close)
	return s
}

// sends records the bodies sent to each queue.
type sends struct {
	queue.Sender
	mu     sync.Mutex
	bodies map[string][]string
}

func (s *sends) SendBatch(ctx context.Context, name string, entries []queue.Entry) error {
	s.mu.Lock()
	if s.bodies == nil {
		s.bodies = map[string][]string{}
	}
	for _, e := range entries {
		s.bodies[name] = append(s.bodies[name], e.Body)
	}
	s.mu.Unlock()
	return s.Sender.SendBatch(ctx, name, entries)
}

func (s *sends) to(name string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.bodies[name])
}

// renderCrawl crawls the site from a spec with the render section (empty: none) on a fresh
// embedded backend, with the fake browser; configure may change the pipeline's configuration. It
// returns the records' titles and links by path, what went to each queue, and the backend.
func renderCrawl(t *testing.T, site *httptest.Server, section string, configure func(*pipeline.Config)) (map[string]string, *sends, *harness, string) {
	t.Helper()
	h := newHarness(t, 1, 1, 30*time.Second)
	ctx := context.Background()
	spec := fmt.Sprintf("version: 1\nseeds: [%s/]\n%s", site.URL, section)
	crawl, err := h.Start(ctx, h.Res, "app.yaml", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	cfg := h.Config()
	if configure != nil {
		configure(&cfg)
	}
	sent := &sends{Sender: h.Queue}
	ports := h.Ports()
	ports.Queue, ports.Browser = sent, &renderertest.Browser{}
	if err := h.Run(ctx, crawl, cfg, ports, h.Queue, 4); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for u, r := range h.RecordsOf(crawl) {
		got[strings.TrimPrefix(u, site.URL)] = fmt.Sprintf("%s rendered=%v links=%v", r.Title, r.Rendered, r.OutLinks)
	}
	return got, sent, h, crawl
}

// TestARenderingCrawlFollowsScriptBuiltLinks: with render on, the crawl of a site whose links
// scripts build reaches every page, each parsed from its rendered DOM, its parse messages going
// through the render queue; with it off, it records the seed alone.
func TestARenderingCrawlFollowsScriptBuiltLinks(t *testing.T) {
	t.Parallel()
	site := jsSite(t)
	on, sent, h, crawl := renderCrawl(t, site, "render:\n  when_fewer_links: 1\n", nil)
	u := func(p string) string { return site.URL + p }
	want := map[string]string{
		"/":  fmt.Sprintf("Home rendered=true links=[%s %s]", u("/a"), u("/b")),
		"/a": fmt.Sprintf("A rendered=true links=[%s]", u("/c")),
		"/b": "B rendered=true links=[]",
		"/c": "C rendered=true links=[]",
	}
	if fmt.Sprint(on) != fmt.Sprint(want) {
		t.Errorf("with render on, records\n  %v\nwant\n  %v", on, want)
	}
	if len(sent.to(h.Res.Render)) == 0 || len(sent.to(h.Res.Parse)) == 0 {
		t.Errorf("%d messages to render, %d to parse: want the pages through render to parse", len(sent.to(h.Res.Render)), len(sent.to(h.Res.Parse)))
	}
	c, err := crawlstate.New(h.Table).Tally(context.Background(), crawl)
	if err != nil {
		t.Fatal(err)
	}
	if c.Pending() != 0 || c.Fetched != 4 || c.Failed != 0 {
		t.Errorf("counters %+v: want 4 fetched, none pending or failed", c)
	}
	for _, dlq := range []string{h.Res.ScheduleDLQ, h.Res.FetchDLQ, h.Res.ParseDLQ, h.Res.RenderDLQ} {
		if v, nv, err := h.Queue.Depth(context.Background(), dlq); err != nil || v+nv != 0 {
			t.Errorf("dead-letter queue %s: %d messages (%v)", dlq, v+nv, err)
		}
	}
	off, sent, h, _ := renderCrawl(t, site, "", nil)
	if want := map[string]string{"/": "Home rendered=false links=[]"}; fmt.Sprint(off) != fmt.Sprint(want) {
		t.Errorf("with render off, records %v, want %v", off, want)
	}
	if n := len(sent.to(h.Res.Render)); n != 0 {
		t.Errorf("with render off, %d messages to the render queue", n)
	}
}

// TestWithoutRenderTheParseMessagesAreUnchanged: a crawl whose spec has no render section sends
// parse the very messages a pipeline without a render step sends (the file's key, the fetch times
// and the records' offsets aside, which differ from crawl to crawl), and nothing to the render
// queue.
func TestWithoutRenderTheParseMessagesAreUnchanged(t *testing.T) {
	t.Parallel()
	site := jsSite(t)
	_, with, hw, _ := renderCrawl(t, site, "", nil)
	_, without, ho, _ := renderCrawl(t, site, "", func(c *pipeline.Config) { c.RenderQueue = "" })
	norm := func(bodies []string, crawl string) []string {
		key := regexp.MustCompile(`pages/[^"]+\.warc\.gz`)
		at := regexp.MustCompile(`"fetchedAt":"[^"]+"`)
		// The warcinfo record names the file, and a random name compresses to a byte more or less.
		span := regexp.MustCompile(`"offset":[0-9]+,"length":[0-9]+`)
		out := make([]string, len(bodies))
		for i, b := range bodies {
			if _, err := message.DecodeParse(b); err != nil {
				t.Fatalf("a parse message that does not decode: %v", err)
			}
			b = strings.ReplaceAll(b, crawl, "CRAWL")
			b = at.ReplaceAllString(key.ReplaceAllString(b, "KEY"), `"fetchedAt":"T"`)
			out[i] = span.ReplaceAllString(b, `"offset":O,"length":L`)
		}
		return out
	}
	crawlOf := func(bodies []string) string {
		m, err := message.DecodeParse(bodies[0])
		if err != nil {
			t.Fatal(err)
		}
		return m.Crawl
	}
	a, b := with.to(hw.Res.Parse), without.to(ho.Res.Parse)
	if len(a) == 0 || len(b) == 0 {
		t.Fatalf("%d and %d parse messages", len(a), len(b))
	}
	if x, y := norm(a, crawlOf(a)), norm(b, crawlOf(b)); !slices.Equal(x, y) {
		t.Errorf("with a render step, parse got\n  %v\nwithout one\n  %v", x, y)
	}
	if n := len(with.to(hw.Res.Render)); n != 0 {
		t.Errorf("%d messages to the render queue", n)
	}
}
