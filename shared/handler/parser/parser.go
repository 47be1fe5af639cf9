// Package parser is the parse handler: it reads the stored responses a parse message names (the
// pages one fetch batch stored in one WARC file, or a single page) back from their file, extracts
// the title, links, robots directives and the crawl spec's fields (shared/crawl/web/extract), writes one
// structured record per page (shared/crawl/records: JSON lines, one object in the blob store per
// batch), and sends the links it may follow back to schedule, packed. A page fetched as a sitemap
// (or a robots.txt read for its Sitemap: lines) is read with shared/crawl/web/sitemap instead.
//
// A message is marked parsed, with one table item for all its pages that names the Links messages
// sent (the crawl's end waits for each: crawlstate.MarkMessageParsedPages), only after its records
// are stored and its links are sent, so a crash loses nothing: the redelivered message parses its
// pages again (their links are deduplicated by schedule; their records may appear twice in
// records/, with the same url and fetchedAt).
package parser

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/records"
	"github.com/crawlstack/crawlstack/shared/crawl/safelog"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
	"github.com/crawlstack/crawlstack/shared/crawl/web/doctype"
	"github.com/crawlstack/crawlstack/shared/crawl/web/extract"
	"github.com/crawlstack/crawlstack/shared/crawl/web/links"
	"github.com/crawlstack/crawlstack/shared/crawl/web/robots"
	"github.com/crawlstack/crawlstack/shared/handler/sqsbatch"
	"github.com/crawlstack/crawlstack/shared/port/blob"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// Blobs is what parse needs of the blob store.
type Blobs interface {
	GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error)
	Put(ctx context.Context, key string, body []byte, contentType string) error
}

// Handoff hands over pages a fetch handler in the same process has just stored (handoff.Pages).
type Handoff interface {
	Take(ref message.Ref) (warcfile.Page, bool)
}

// Config tunes the handler.
type Config struct {
	ScheduleQueue string
	// MaxDepth stops sending links deeper than this (negative: no limit); schedule checks again.
	MaxDepth int
	// UserAgentToken is the crawler's product token, for <meta name="token"> and X-Robots-Tag.
	UserAgentToken string
	// MaxLinks caps the links taken from one page.
	MaxLinks int
	// Concurrency is how many records of a batch are parsed at once.
	Concurrency int
	// StreamQueue, if set, is the queue each page's record is sent to as it is stored (stream.go).
	StreamQueue string
}

// Parsed is the record of the parse messages done, of the records file each was stored in, and
// of the Links messages each sent (crawlstate.Store): a duplicate delivery is dropped, a recrawl
// finds the previous crawl's records, and the crawl's end waits for every Links message sent.
type Parsed interface {
	IsMessageParsed(ctx context.Context, crawl, name string) (bool, error)
	MarkMessageParsedPages(ctx context.Context, crawl, name, records string, links []string, pages int) (bool, error)
	RecordsOf(ctx context.Context, crawl, name string) (string, error)
}

// Outcomes ends the URL of a page whose stored copy is gone as failed, class page_gone
// (crawlstate.URLs.EndPageGone): false when it was ended so already, and counted then.
type Outcomes interface {
	EndPageGone(ctx context.Context, crawl, key, warcKey string, cause error) (bool, error)
}

// Counters counts the pages that could not be parsed and the links robots.txt refused, and writes the counts it buffered at the
// end of each batch (crawlstate.Store).
type Counters interface {
	CountParseError(ctx context.Context, crawl string, class errclass.Class) error
	// CountRobotsRefused counts links refused here by their hosts' robots.txt (robots.go).
	CountRobotsRefused(ctx context.Context, crawl string, n int64) error
	Flush(ctx context.Context) error
}

// Deps are the handler's collaborators.
type Deps struct {
	Parsed   Parsed
	Counters Counters
	// Outcomes, if set, ends a URL whose page is gone as failed (page_gone); nil counts it as a
	// parse error of that class and leaves it fetched.
	Outcomes Outcomes
	Blobs    Blobs
	Send     queue.Sender
	// Batch runs the records of a batch (nil: a runner without quarantine); its Concurrency is
	// Config.Concurrency.
	Batch *sqsbatch.Runner
	// Log is where the handler logs (nil: slog.Default()).
	Log *slog.Logger
	// Crawls, if set, gives each crawl's depth, User-Agent and extraction fields (a spec's over
	// the stack's); nil: Config's MaxDepth and UserAgentToken for every crawl, and no fields.
	Crawls CrawlSettings
	// Prior, if set, reads the previous crawl's records, which a recrawl reuses for the pages it
	// found unchanged (recrawl.go); nil parses their payload instead.
	Prior PriorRecords
	// Handoff, if set, is asked for each page before it is read from the blob store: the page as
	// stored, without reading and decoding its record again, and without the read that checks for
	// a duplicate delivery. Set it only when fetch runs in the same process and offers each page to
	// the same handoff before the page's parse message goes out.
	Handoff Handoff
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// CrawlSettings tells the settings of one crawl (specstore.Store).
type CrawlSettings interface {
	For(ctx context.Context, crawl string) (*crawlspec.Crawl, error)
}

// Handler is the parse handler.
type Handler struct {
	cfg         Config
	parsed      Parsed
	counters    Counters
	outcomes    Outcomes
	blobs       Blobs
	send        queue.Sender
	batch       *sqsbatch.Runner
	log         *slog.Logger
	crawls      CrawlSettings
	priorReader PriorRecords
	prior       priorCache
	handoff     Handoff
	now         func() time.Time
}

// New returns a Handler, complete: nothing is set on it afterwards.
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
	b := *d.Batch
	b.Concurrency = max(cfg.Concurrency, 1)
	return &Handler{cfg: cfg, parsed: d.Parsed, counters: d.Counters, outcomes: d.Outcomes, blobs: d.Blobs, send: d.Send, batch: &b, log: d.Log,
		crawls: d.Crawls, priorReader: d.Prior, handoff: d.Handoff, now: d.Now}
}

// parsed is a page waiting for the batch's records file.
type parsed struct {
	crawl string
	page  message.Page
	out   records.Record
	links []string
	// sitemaps are the sitemaps a sitemap index or a robots.txt lists, to fetch as sitemaps.
	sitemaps []string
	// lastMod are the lastmods a sitemap gives its links, by URL (Unix seconds).
	lastMod map[string]int64
}

// work is one parse message: its pages, parsed.
type work struct {
	rec   events.SQSMessage
	crawl string
	name  string // message.Parse.Name, under which the message is marked done
	pages []parsed
	// robotsRefused is how many URLs its pages link to that robots.txt refused here (robots.go).
	robotsRefused int
}

// Handle processes one SQS batch of parse messages.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	pages := newSpanReader(h.blobs, ev)
	parse := func(ctx context.Context, rec events.SQSMessage) (*work, error) { return h.parseOne(ctx, rec, pages) }
	resp := sqsbatch.Collect(ctx, h.batch, ev, parse, h.storeAll)
	if err := h.counters.Flush(ctx); err != nil {
		h.log.Warn("flush the crawl counters", "err", err.Error())
	}
	return resp, nil
}

// parseOne parses the pages of one message. It returns (nil, nil) for a message already done.
func (h *Handler) parseOne(ctx context.Context, rec events.SQSMessage, pages *spanReader) (*work, error) {
	m, err := pages.decode(rec)
	if err != nil {
		return nil, err
	}
	file, list := m.PageList()
	for _, pg := range list {
		if _, err := urlnorm.Normalize(pg.URL); err != nil {
			return nil, errclass.Errorf(errclass.Poison, "parse message url: %v", err)
		}
	}
	w := &work{rec: rec, crawl: m.Crawl, name: m.Name()}
	// Pages still in the handoff have not been parsed: fetch offered them before their first parse
	// message went out, and the first take forgets them. Any other delivery may be a duplicate.
	handed := make([]*warcfile.Page, len(list))
	all := true
	for i, pg := range list {
		if page, ok := h.takeHandedOver(pg.Ref(file)); ok {
			handed[i] = &page
		} else {
			all = false
		}
	}
	if !all {
		done, err := h.parsed.IsMessageParsed(ctx, m.Crawl, w.name)
		if err != nil {
			return nil, err
		}
		if done {
			return nil, nil // a duplicate delivery
		}
	}
	for i, pg := range list {
		p, err := h.parsePage(ctx, m.Crawl, file, pg, handed[i], pages)
		if err != nil {
			return nil, err
		}
		w.pages = append(w.pages, *p)
	}
	if err := h.refuseByRobots(ctx, w, h.heldRules(m)); err != nil {
		return nil, err
	}
	return w, nil
}

// parsePage parses one page of a message: the one handed over, or read from its WARC file. A page
// that does not decode or parse is recorded with its error; a failed read fails the message.
func (h *Handler) parsePage(ctx context.Context, crawl, file string, pg message.Page, handed *warcfile.Page, pages *spanReader) (*parsed, error) {
	ref := pg.Ref(file)
	p := &parsed{crawl: crawl, page: pg, out: records.Record{Crawl: crawl, URL: pg.URL, FinalURL: pg.FinalURL,
		Depth: pg.Depth, Status: pg.Status, ContentType: pg.ContentType, FetchedAt: pg.FetchedAt, WARC: ref, OutLinks: []string{}}}
	if un := pg.Unchanged; un != nil {
		return h.parseUnchanged(ctx, crawl, p, un, pages)
	}
	var page warcfile.Page
	if handed != nil {
		page = *handed
	} else {
		raw, err := pages.read(ctx, ref)
		if errors.Is(err, blob.ErrNotFound) {
			// Purged, or expired by the lifecycle: reading again cannot help, and the DLQ would
			// only hold the message. The page's record says so, and the message is done.
			return h.pageGone(ctx, p, fmt.Errorf("read %s: %w", ref.Key, err))
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", ref.Key, err)
		}
		if page, err = warcfile.Decode(raw); err != nil {
			return h.parseError(ctx, p, err)
		}
	}
	p.out.RenderError = pg.RenderError
	if pg.Rendered != nil {
		dom, err := h.readRendered(ctx, *pg.Rendered, pages)
		if err != nil {
			return nil, err
		}
		return h.parseBody(ctx, crawl, p, page, dom)
	}
	return h.parseBody(ctx, crawl, p, page, nil)
}

// RenderGoneReason is a page's renderError when its rendered DOM can no longer be read: it is
// parsed from its static HTML.
const RenderGoneReason = "render/gone"

// readRendered reads the rendered DOM of a page (a WARC conversion record, shared/handler/renderer).
// A record that is gone or does not decode is nil: the page is parsed from its static HTML.
func (h *Handler) readRendered(ctx context.Context, ref message.Ref, pages *spanReader) (*warcfile.Conversion, error) {
	raw, err := pages.read(ctx, ref)
	if errors.Is(err, blob.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the rendered page in %s: %w", ref.Key, err)
	}
	c, err := warcfile.DecodeConversion(raw)
	if err != nil {
		h.log.Warn("a rendered page does not decode: parsing its static HTML", "key", ref.Key, "err", err.Error())
		return nil, nil
	}
	return &c, nil
}

// parseBody fills the record of p from its page as stored: links, metadata and fields. A page
// with a rendered DOM (dom, nil: none) is read from that DOM, under the response's header and
// digest.
func (h *Handler) parseBody(ctx context.Context, crawl string, p *parsed, page warcfile.Page, dom *warcfile.Conversion) (*parsed, error) {
	pg := p.page
	p.out.Digest = page.BodyDigest()
	p.out.ETag, p.out.LastModified = page.Header.Get("ETag"), page.Header.Get("Last-Modified")
	switch {
	case dom != nil:
		page.Body, page.Header = dom.Body, page.Header.Clone()
		page.Header.Set("Content-Type", dom.ContentType) // the DOM is UTF-8, whatever the response's charset
		p.out.Rendered = true
	case pg.Rendered != nil:
		p.out.RenderError = RenderGoneReason
	}
	final, err := url.Parse(pg.FinalURL)
	if err != nil {
		return h.parseError(ctx, p, err)
	}
	cs, err := h.crawlSettings(ctx, crawl)
	if err != nil {
		return nil, err
	}
	maxDepth, fields := cs.maxDepth, cs.fields
	if pg.Sitemap {
		return h.parseSitemap(ctx, p, page, final, maxDepth)
	}
	lf, err := LinksOf(page, final, cs.token, h.cfg.MaxLinks)
	if errclass.Of(err) == errclass.Type && pg.ContentType != "" {
		if kind, ok := doctype.Of(page.Header.Get("Content-Type")); ok && slices.Contains(cs.parse, kind) {
			// A PDF, JSON or text response the spec parses (content.go).
			return h.parseContent(ctx, p, page, final, kind, cs)
		}
		// A type the crawl keeps though it is not parsed (the spec's keep): stored, and
		// recorded with its status, type and digest, without links or fields.
		return p, nil
	}
	if err != nil {
		return h.parseError(ctx, p, err)
	}
	if fields.Len() > 0 {
		res := fields.Extract(final, page.Body, page.Header.Get("Content-Type"))
		p.out.Data, p.out.DataErrors, p.out.Items = res.Data, res.Errors, res.Items
	}
	p.out.Title, p.out.Canonical, p.out.Charset = lf.Found.Title, lf.Found.Canonical, lf.Found.Charset
	p.out.NoIndex, p.out.NoFollow = lf.NoIndex, lf.NoFollow
	for _, l := range lf.Found.Links {
		p.out.OutLinks = append(p.out.OutLinks, l.URL)
		if l.NoFollow {
			p.out.NoFollowLinks = append(p.out.NoFollowLinks, l.URL)
		}
	}
	p.links = lf.Follow
	if maxDepth >= 0 && pg.Depth+1 > maxDepth {
		p.links = nil
	}
	return p, nil
}

// PageLinks are the links of a stored page as parse reads them.
type PageLinks struct {
	Found links.Page
	// Follow are the links to follow: all found, less those that the page's meta robots, its
	// X-Robots-Tag header or the link's rel marks nofollow.
	Follow            []string
	NoIndex, NoFollow bool
}

// LinksOf extracts the links of page, fetched from final, as parse does (token is the crawler's
// robots product token; maxLinks bounds them). crawl run uses it too, to send the links of pages
// parsed before again when a flag that left some out has changed.
func LinksOf(page warcfile.Page, final *url.URL, token string, maxLinks int) (PageLinks, error) {
	found, err := links.Extract(page.Body, page.Header.Get("Content-Type"), final,
		links.Options{MaxLinks: maxLinks, UserAgentToken: token})
	if err != nil {
		return PageLinks{}, err
	}
	hdrNoIndex, hdrNoFollow := links.XRobotsTag(page.Header.Values("X-Robots-Tag"), token)
	pl := PageLinks{Found: found, NoIndex: found.NoIndex || hdrNoIndex, NoFollow: found.NoFollow || hdrNoFollow}
	for _, l := range found.Links {
		if !pl.NoFollow && !l.NoFollow {
			pl.Follow = append(pl.Follow, l.URL)
		}
	}
	return pl, nil
}

// settings are what parse reads of a crawl's settings.
type settings struct {
	maxDepth int
	token    string
	fields   *extract.Set
	// parse are the kinds of response parsed besides HTML (crawlspec.Crawl.Parse).
	parse []doctype.Kind
}

// crawlSettings are the depth, product token, fields and parsed kinds of crawl.
func (h *Handler) crawlSettings(ctx context.Context, crawl string) (settings, error) {
	if h.crawls == nil {
		return settings{maxDepth: h.cfg.MaxDepth, token: h.cfg.UserAgentToken}, nil
	}
	c, err := h.crawls.For(ctx, crawl)
	if err != nil {
		return settings{}, err
	}
	// A link goes to schedule when any host may take it that deep: schedule checks its own host's.
	return settings{maxDepth: c.Rules.Deepest(), token: robots.ProductToken(c.UserAgent), fields: c.Fields, parse: c.Parse}, nil
}

func (h *Handler) takeHandedOver(ref message.Ref) (warcfile.Page, bool) {
	if h.handoff == nil {
		return warcfile.Page{}, false
	}
	return h.handoff.Take(ref)
}

// parseError records a page that could not be parsed; its URL stays fetched.
func (h *Handler) parseError(ctx context.Context, p *parsed, cause error) (*parsed, error) {
	p.out.Class, p.out.Error = errclass.Parse, safelog.Truncate(cause.Error())
	if err := h.counters.CountParseError(ctx, p.crawl, errclass.Parse); err != nil {
		return nil, err
	}
	return p, nil
}

// pageGone records p as a page whose stored copy is gone (errclass.PageGone), with no links, and
// ends its URL as failed with that class, counted as a failure (once: a duplicate delivery, or a
// redelivery after a failed store, finds it ended). Without Outcomes it is counted as a parse
// error of the class instead, and its URL stays fetched.
func (h *Handler) pageGone(ctx context.Context, p *parsed, cause error) (*parsed, error) {
	p.out.Class, p.out.Error = errclass.PageGone, safelog.Truncate(cause.Error())
	if h.outcomes != nil {
		u, err := urlnorm.Normalize(p.page.URL)
		if err != nil {
			return nil, errclass.Errorf(errclass.Poison, "parse message url: %v", err)
		}
		// Ended now and counted, or ended (and counted) before, or erased: nothing more to count.
		if _, err := h.outcomes.EndPageGone(ctx, p.crawl, urlnorm.Key(u.String()), p.out.WARC.Key, cause); err != nil {
			return nil, err
		}
		return p, nil
	}
	if err := h.counters.CountParseError(ctx, p.crawl, errclass.PageGone); err != nil {
		return nil, err
	}
	return p, nil
}
