// Package renderer is the render step between fetch and parse, for crawls whose spec has a render
// section (crawlspec.Render). Fetch sends such a crawl's parse messages to the render queue
// instead of the parse queue. The render handler reads each page back from its WARC file, decides
// whether it needs rendering (decide.go), runs those through a Browser with a Loader that applies
// the SSRF guard, the crawl's scope and robots.txt to every sub-request (loader.go), stores the
// rendered DOMs of the batch's pages as WARC conversion records in one WARC file of its own
// (warcfile.EncodeConversion: each refers to its page's response record), and forwards each
// message to parse, its pages carrying where their DOM is (message.Page.Rendered).
//
// A forwarded message keeps its name (message.Parse.Name), so parse's mark deduplicates it as it
// does any parse message, and the crawl's end waits for it as before: a send the SDK replays, a
// duplicate delivery, or a crash between the file's PUT and the send (the redelivery renders
// again, and the first file is left unreferenced) lose no page and parse none twice. A message
// already parsed is dropped unrendered.
//
// No browser (render.ErrNoBrowser) renders nothing and loses nothing: the handler logs it once a
// batch, and each page that was to render goes to parse with RenderError "render/no-browser",
// parsed from its static HTML, its record saying so.
package renderer

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawl/layout"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
	"github.com/crawlstack/crawlstack/shared/crawl/web/render"
	"github.com/crawlstack/crawlstack/shared/handler/sqsbatch"
	"github.com/crawlstack/crawlstack/shared/port/blob"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// Browser runs a stored page's scripts and returns the DOM they build (the Chromium browser of
// shared/crawl/web/render). It returns an error wrapping render.ErrNoBrowser when no browser can
// start. It is called from several goroutines at once.
type Browser interface {
	Render(ctx context.Context, req render.Request) (render.Result, error)
}

// Blobs is what the handler needs of the blob store: the pages' records, and its own WARC files.
type Blobs interface {
	GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error)
	Put(ctx context.Context, key string, body []byte, contentType string) error
}

// Parsed tells whether parse has done a message already (crawlstate.URLs): a render step's copy
// of it then has nothing left to do.
type Parsed interface {
	IsMessageParsed(ctx context.Context, crawl, name string) (bool, error)
}

// CrawlSettings tells the settings of one crawl (specstore.Store).
type CrawlSettings interface {
	For(ctx context.Context, crawl string) (*crawlspec.Crawl, error)
}

// Render errors, as a page's message.Page.RenderError and its record's renderError give them.
const (
	// ErrNoBrowserReason: no browser could start (render.ErrNoBrowser).
	ErrNoBrowserReason = "render/no-browser"
	// ErrFailedReason: the browser failed on the page (it crashed, or its page would not load).
	ErrFailedReason = "render/failed"
)

// Config tunes the handler.
type Config struct {
	ParseQueue string
	// Concurrency is how many messages of a batch are rendered at once.
	Concurrency int
	// IndexEachFile writes a CDXJ index beside each WARC file, as fetch does.
	IndexEachFile bool
}

// Deps are the handler's collaborators.
type Deps struct {
	Parsed  Parsed
	Blobs   Blobs
	Send    queue.Sender
	Crawls  CrawlSettings
	Browser Browser
	// Web is what a Loader fetches sub-requests with; see NewLoader.
	Web Web
	// Batch runs the records of a batch (nil: a runner without quarantine).
	Batch *sqsbatch.Runner
	Log   *slog.Logger
	Now   func() time.Time
}

// Handler is the render handler.
type Handler struct {
	cfg     Config
	parsed  Parsed
	blobs   Blobs
	send    queue.Sender
	crawls  CrawlSettings
	browser Browser
	web     Web
	batch   *sqsbatch.Runner
	log     *slog.Logger
	now     func() time.Time
}

// New returns a Handler, complete: nothing is set on it afterwards. A nil Browser is a stack with
// no browser: every page that was to render is parsed from its static HTML, and says so.
func New(cfg Config, d Deps) *Handler {
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.Batch == nil {
		d.Batch = &sqsbatch.Runner{Log: d.Log}
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Browser == nil {
		d.Browser = NoBrowser{Reason: "this crawler was started without one"}
	}
	b := *d.Batch
	b.Concurrency = max(cfg.Concurrency, 1)
	return &Handler{cfg: cfg, parsed: d.Parsed, blobs: d.Blobs, send: d.Send, crawls: d.Crawls, browser: d.Browser, web: d.Web,
		batch: &b, log: d.Log, now: d.Now}
}

// NoBrowser is the Browser of a crawler that has none: every render fails with
// render.ErrNoBrowser and Reason.
type NoBrowser struct{ Reason string }

// Render fails with render.ErrNoBrowser.
func (n NoBrowser) Render(context.Context, render.Request) (render.Result, error) {
	return render.Result{}, fmt.Errorf("%w: %s", render.ErrNoBrowser, n.Reason)
}

// page is one page of a message, rendered or not.
type page struct {
	dom      []byte // the rendered DOM; nil: not rendered
	url      string // the response record's WARC-Target-URI
	refersTo string // the response record's WARC-Record-ID
	err      string // message.Page.RenderError
}

// work is one message, its pages rendered.
type work struct {
	rec   events.SQSMessage
	msg   *message.Parse
	pages []page
}

// batchState is what the records of one batch share: whether it has logged a missing browser.
type batchState struct{ noBrowser atomic.Bool }

// Handle processes one SQS batch of messages bound for parse.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	st := &batchState{}
	one := func(ctx context.Context, rec events.SQSMessage) (*work, error) { return h.renderOne(ctx, rec, st) }
	return sqsbatch.Collect(ctx, h.batch, ev, one, h.storeAll), nil
}

// renderOne renders the pages of one message that need it. It returns (nil, nil) for a message
// parse has done already.
func (h *Handler) renderOne(ctx context.Context, rec events.SQSMessage, st *batchState) (*work, error) {
	m, err := message.DecodeParse(rec.Body)
	if err != nil {
		return nil, err
	}
	done, err := h.parsed.IsMessageParsed(ctx, m.Crawl, m.Name())
	if err != nil {
		return nil, fmt.Errorf("is %s parsed: %w", m.Name(), err)
	}
	if done {
		return nil, nil // a duplicate delivery, or a copy sent again after parse had it
	}
	c, err := h.crawls.For(ctx, m.Crawl)
	if err != nil {
		return nil, err
	}
	file, list := m.PageList()
	w := &work{rec: rec, msg: m, pages: make([]page, len(list))}
	if c.Spec == nil || c.Spec.Render == nil {
		return w, nil // nothing to render: parse gets the message as it came
	}
	rules, err := compile(c.Spec.Render)
	if err != nil {
		return nil, err
	}
	for i, pg := range list {
		if w.pages[i], err = h.renderPage(ctx, m.Crawl, c, rules, pg.Ref(file), pg, st); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// renderPage reads one page and renders it if it needs to. A page that cannot be read back is
// left to parse, which records why; a failed render is a page parsed from its static HTML with
// the reason; a cancelled context fails the message.
func (h *Handler) renderPage(ctx context.Context, crawl string, c *crawlspec.Crawl, rules *rules, ref message.Ref, pg message.Page, st *batchState) (page, error) {
	if !rules.mayRender(pg) {
		return page{}, nil
	}
	raw, err := h.blobs.GetRange(ctx, ref.Key, ref.Offset, ref.Length)
	if errors.Is(err, blob.ErrNotFound) {
		return page{}, nil // gone: parse records it as such
	}
	if err != nil {
		return page{}, fmt.Errorf("read %s: %w", ref.Key, err)
	}
	stored, err := warcfile.Decode(raw)
	if err != nil || stored.Revisit != nil {
		return page{}, nil // parse records why it cannot read it
	}
	need, err := rules.needs(pg, stored)
	if err != nil || !need {
		return page{}, nil
	}
	res, err := h.browser.Render(ctx, render.Request{Page: render.Page{URL: stored.URL, Status: stored.Status, Header: stored.Header,
		Body: stored.Body}, Wait: rules.wait, Limits: rules.limits, Loader: NewLoader(h.web, c, pg)})
	switch {
	case errors.Is(err, render.ErrNoBrowser):
		if !st.noBrowser.Swap(true) {
			h.log.Error("no browser: the pages to render are parsed from their static HTML", "crawl", crawl, "err", err.Error())
		}
		return page{err: ErrNoBrowserReason}, nil
	case ctx.Err() != nil:
		return page{}, fmt.Errorf("render %s: %w", pg.URL, ctx.Err())
	case err != nil:
		h.log.Warn("render failed: the page is parsed from its static HTML", "url", pg.URL, "err", err.Error())
		return page{err: ErrFailedReason}, nil
	}
	return page{dom: res.DOM, url: stored.URL, refersTo: stored.RecordID}, nil
}

// storeAll writes each crawl's rendered pages to one WARC file and forwards the messages to
// parse. It returns the message ids to deliver again.
func (h *Handler) storeAll(ctx context.Context, works []work) []string {
	return message.EachCrawl(works, func(w work) string { return w.msg.Crawl }, func(crawl string, works []work) []string {
		return h.storeCrawl(ctx, crawl, works)
	})
}

func (h *Handler) storeCrawl(ctx context.Context, crawl string, works []work) []string {
	retryAll := func(err error) []string {
		h.log.Error("storing rendered pages failed", "crawl", crawl, "messages", len(works), "err", err.Error())
		ids := make([]string, len(works))
		for i, w := range works {
			ids[i] = w.rec.MessageId
		}
		return ids
	}
	now := h.now().UTC()
	key := fmt.Sprintf("%s%s/%s-rendered.warc.gz", layout.PagesDir(crawl), now.Format("2006/01/02"), strings.ToLower(rand.Text()))
	refs, err := h.putRendered(ctx, key, now, works)
	if err != nil {
		return retryAll(err)
	}
	var entries []queue.Entry
	var failed []string
	for i, w := range works {
		body, err := message.Encode(forward(w, refs[i]))
		if err != nil {
			h.log.Error("forward to parse", "message", w.msg.Name(), "err", err.Error())
			failed = append(failed, w.rec.MessageId)
			continue
		}
		entries = append(entries, queue.Entry{ID: strconv.Itoa(i), Body: body})
	}
	if err := h.send.SendBatch(ctx, h.cfg.ParseQueue, entries); err != nil {
		h.log.Warn("send parse messages", "err", err.Error())
		var be *queue.BatchError
		for _, e := range entries {
			if i, _ := strconv.Atoi(e.ID); !errors.As(err, &be) || be.Failed[e.ID] != nil {
				failed = append(failed, works[i].rec.MessageId)
			}
		}
	}
	return failed
}

// putRendered stores the conversion records of the works' rendered pages in one WARC file at key
// (none if no page rendered), and returns where each page's record is, by work and page.
func (h *Handler) putRendered(ctx context.Context, key string, now time.Time, works []work) ([][]*message.Ref, error) {
	var recs []warcfile.Record
	var at [][2]int
	for i, w := range works {
		for j, p := range w.pages {
			if p.dom == nil {
				continue
			}
			r, err := warcfile.EncodeConversion(warcfile.Conversion{URL: p.url, RefersTo: p.refersTo, At: now,
				ContentType: "text/html; charset=utf-8", Body: p.dom})
			if err != nil {
				return nil, err
			}
			recs, at = append(recs, r), append(at, [2]int{i, j})
		}
	}
	refs := make([][]*message.Ref, len(works))
	for i, w := range works {
		refs[i] = make([]*message.Ref, len(w.pages))
	}
	if len(recs) == 0 {
		return refs, nil
	}
	file, err := warcfile.Assemble(path.Base(key), now, recs)
	if err != nil {
		return nil, fmt.Errorf("assemble %s: %w", key, err)
	}
	if err := h.blobs.Put(ctx, key, file.Data, warcfile.ContentType); err != nil {
		return nil, fmt.Errorf("put %s: %w", key, err)
	}
	if h.cfg.IndexEachFile {
		if err := h.blobs.Put(ctx, key+warcfile.IndexSuffix, file.Index, warcfile.IndexContentType); err != nil {
			return nil, fmt.Errorf("put the index of %s: %w", key, err)
		}
	}
	for n, ij := range at {
		s := file.Spans[n]
		refs[ij[0]][ij[1]] = &message.Ref{Key: key, Offset: s.Offset, Length: s.Length}
	}
	return refs, nil
}

// forward is w's message as parse gets it: the same name and pages, each rendered page with
// where its DOM is, each that failed to with why.
func forward(w work, refs []*message.Ref) message.Parse {
	m := *w.msg
	if len(m.Pages) == 0 {
		m.Rendered, m.RenderError = refs[0], w.pages[0].err
		return m
	}
	m.Pages = append([]message.Page(nil), m.Pages...)
	for i := range m.Pages {
		m.Pages[i].Rendered, m.Pages[i].RenderError = refs[i], w.pages[i].err
	}
	return m
}
