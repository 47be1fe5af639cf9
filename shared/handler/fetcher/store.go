package fetcher

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/crawlstack/crawlstack/shared/crawl/layout"
	"github.com/crawlstack/crawlstack/shared/crawl/retry"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
	"github.com/crawlstack/crawlstack/shared/port/blob"
	"github.com/crawlstack/crawlstack/shared/port/queue"
	"github.com/crawlstack/crawlstack/shared/port/table"
	"github.com/crawlstack/crawlstack/shared/port/turn"
)

// PagesPrefix is where fetch writes its WARC files.
const PagesPrefix = layout.Pages

// storeAll writes pages of the batch as one WARC file per crawl, sends their parse messages and
// records them as fetched. It returns the work (by work.n) that must be tried again. last: the
// batch fetches nothing more, and only waits once its files are written.
func (h *Handler) storeAll(ctx context.Context, pages []fetched, last bool) []int {
	failed := message.EachCrawl(pages, func(p fetched) string { return p.msg.Crawl }, func(crawl string, pages []fetched) []int {
		return h.storeCrawl(ctx, crawl, pages, last)
	})
	// The outcomes of the records of crawls without a page in this batch.
	notRecorded, _ := h.record(ctx, "")
	for id := range notRecorded {
		failed = append(failed, id)
	}
	return failed
}

// storeCrawl stores the pages of one crawl: one WARC file, their outcomes recorded before their
// parse messages go out (the outbox). It returns the work (by work.n) that must be tried again.
func (h *Handler) storeCrawl(ctx context.Context, crawl string, pages []fetched, last bool) []int {
	now := h.now().UTC()
	key := fmt.Sprintf("%s%s/%s/%s.warc.gz", PagesPrefix, crawl, now.Format("2006/01/02"), batchID())
	file, err := assemble(key, now, pages)
	if err != nil {
		return h.retryAll(crawl, pages, err)
	}
	var durable func() error
	err = h.again(ctx, func() (err error) {
		durable, err = h.putFile(ctx, key, file)
		return err
	})
	if err != nil {
		return h.retryAll(crawl, pages, err)
	}
	// A deferred file syncs while the pages are recorded, and their parse messages wait for it. A
	// power loss before the sync may lose the file but keep the records: the redelivered fetch
	// messages then find the pages gone and fetch them again (resendParse).
	synced := make(chan error, 1)
	go func() { synced <- durable() }()
	parseQueue, rendering := h.parseQueue(ctx, crawl)
	refs, parts := pageRefs(key, file.Spans, pages, rendering)
	recorded, failed, err := h.recordPages(ctx, crawl, pages, refs)
	if err != nil {
		return h.retryAll(crawl, pages, err)
	}
	if last {
		// Only the sync is left to wait for: a spare batch may fetch meanwhile (`crawl run`).
		turn.GiveBack(ctx)
	}
	if err := <-synced; err != nil {
		// The file is whole but may not survive a power loss: write it again, durably.
		h.log.Warn("sync the fetched pages; writing them again", "key", key, "err", err.Error())
		if err := h.putFileDurably(ctx, key, file); err != nil {
			// Their URLs are fetched: the redelivered fetch messages check the pages (resendParse).
			h.log.Error("storing fetched pages durably failed", "key", key, "err", err.Error())
			for i, p := range pages {
				if recorded[i] {
					failed = append(failed, p.w.n)
				}
			}
			return failed
		}
	}
	return append(failed, h.sendParse(ctx, crawl, key, pages, refs, parts, recorded, parseQueue, rendering)...)
}

// parseQueue is where the parse messages of crawl go: the render queue when its spec has a render
// section (rendering true) and the stack has a render step, the parse queue otherwise.
func (h *Handler) parseQueue(ctx context.Context, crawl string) (q string, rendering bool) {
	if h.crawls == nil {
		return h.cfg.ParseQueue, false
	}
	c, err := h.crawls.For(ctx, crawl)
	if err != nil || c.Spec == nil || c.Spec.Render == nil {
		// A crawl whose settings cannot be read has failed its fetches before it gets here.
		return h.cfg.ParseQueue, false
	}
	if h.cfg.RenderQueue == "" {
		h.log.Warn("the crawl's spec asks for rendering, but this stack has no render step: its pages are parsed from their static HTML (docs/render.md)",
			"crawl", crawl)
		return h.cfg.ParseQueue, false
	}
	return h.cfg.RenderQueue, true
}

// storeTries bounds the tries of a write that stores or records fetched pages: a transient failure
// is tried again in place, with the crawler's backoff (about 4 s in all), rather than failing the
// pages' messages, whose redeliveries would fetch them again.
const storeTries = 4

// again runs op until it succeeds, at most storeTries times.
func (h *Handler) again(ctx context.Context, op func() error) error {
	return backoff.Retry(op, backoff.WithContext(backoff.WithMaxRetries(retry.NewBackOff(), storeTries-1), ctx))
}

// retryAll fails every page of a crawl that could not be stored. The URLs keep their claims: a
// redelivery claims again under the same owner, and a URL of several goes back alone carrying it
// (work.go).
func (h *Handler) retryAll(crawl string, pages []fetched, err error) []int {
	h.log.Error("storing fetched pages failed", "crawl", crawl, "pages", len(pages), "err", err.Error())
	ids := make([]int, len(pages))
	for i, p := range pages {
		ids[i] = p.w.n
	}
	return ids
}

// pageRefs returns where each page is stored in the file at key, and the parse message (its part
// of the file) each goes in. Each page's message is named before any page is recorded, so that
// the record of a page names the message that carries it. The file's pages go to parse in as few
// messages as fit.
func pageRefs(key string, spans []warcfile.Span, pages []fetched, rendering bool) (refs []crawlstate.Page, parts []int) {
	refs = make([]crawlstate.Page, len(pages))
	for i, p := range pages {
		refs[i] = crawlstate.Page{WARCKey: key, Offset: spans[i].Offset, Length: spans[i].Length, FinalURL: p.resp.URL,
			Status: p.resp.Status, ContentType: p.resp.Header.Get("Content-Type"), FetchedAt: p.resp.FetchedAt}
		noteValidators(&refs[i], &pages[i])
	}
	extra := 0
	if rendering {
		extra = renderedBytes(key)
	}
	parts = partition(pages, refs, extra)
	for i := range refs {
		refs[i].Msg = message.PartName(key, parts[i])
	}
	return refs, parts
}

// recordPages records each page fetched, with where it is stored, before its parse message goes
// out (the outbox): a crash in between leaves a fetched, unparsed URL, and its redelivered fetch
// message sends the parse message again from the record (resendParse), without fetching again.
// The outcomes are recorded with their messages' others (book.go), one write a message. It
// returns which pages are recorded as this batch's, and the work that failed: pages whose
// outcomes were not recorded, and the crawl's other work booked with them.
func (h *Handler) recordPages(ctx context.Context, crawl string, pages []fetched, refs []crawlstate.Page) (recorded []bool, failed []int, err error) {
	for i, p := range pages {
		if err := h.recordOne(ctx, &pages[i], crawlstate.Outcome{Key: p.key, URL: p.msg.URL, State: crawlstate.Fetched,
			Prev: p.prev, Page: &refs[i]}); err != nil {
			return nil, nil, err // no book: cannot happen inside Handle
		}
	}
	notRecorded, lost := h.record(ctx, crawl)
	recorded = make([]bool, len(pages))
	for i, p := range pages {
		switch {
		case notRecorded[p.w.n]:
			// The redelivery fetches it again: the WARC record written here stays unreferenced.
			failed = append(failed, p.w.n)
		case !lost[p.w.n]:
			recorded[i] = true
			h.recordRedirectTarget(ctx, crawl, p)
		}
	}
	for n := range notRecorded {
		if !slices.ContainsFunc(pages, func(p fetched) bool { return p.w.n == n }) {
			failed = append(failed, n) // work without a page, booked with this crawl's
		}
	}
	return recorded, failed, nil
}

// sendParse sends the parse messages of the recorded pages, one per part of the file, and offers
// each page to the handoff. It returns the work whose parse message was not sent: their URLs are
// fetched, and the redelivered fetch messages send the parse messages again.
func (h *Handler) sendParse(ctx context.Context, crawl, key string, pages []fetched, refs []crawlstate.Page, parts []int, recorded []bool,
	parseQueue string, rendering bool) []int {
	msgs := map[int]*message.Parse{}
	rules := map[int][]message.RobotsRules{} // part -> its pages' hosts' robots.txt rules
	senders := map[int][]int{}               // part -> the work of its pages
	var order []int
	for i, p := range pages {
		if !recorded[i] {
			continue
		}
		part := parts[i]
		m := msgs[part]
		if m == nil {
			m = &message.Parse{Header: message.Header{Crawl: crawl}, File: key, Part: part}
			msgs[part] = m
			order = append(order, part)
		}
		m.Pages = append(m.Pages, parsePage(p.msg, refs[i]))
		rules[part] = addRobots(rules[part], p.robots)
		senders[part] = append(senders[part], p.w.n)
		if !rendering { // the render step reads the page back, and parse reads its DOM
			h.offer(key, p, refs[i])
		}
	}
	var failed []int
	var entries []queue.Entry
	extra := 0
	if rendering {
		extra = renderedBytes(key)
	}
	for _, part := range order {
		body, err := encodeParse(msgs[part], rules[part], extra*len(msgs[part].Pages))
		if err != nil {
			failed = append(failed, senders[part]...)
			continue
		}
		entries = append(entries, queue.Entry{ID: strconv.Itoa(part), Body: body})
	}
	if err := h.send.SendBatch(ctx, parseQueue, entries); err != nil {
		h.log.Warn("send parse messages", "err", err.Error())
		var be *queue.BatchError
		if !errors.As(err, &be) {
			for _, e := range entries {
				part, _ := strconv.Atoi(e.ID)
				failed = append(failed, senders[part]...)
			}
			return failed
		}
		for id := range be.Failed {
			part, _ := strconv.Atoi(id)
			failed = append(failed, senders[part]...)
		}
	}
	return failed
}

// offer hands a stored page to a parse handler in the same process, if there is one. A revisit is
// not parsed: parse reuses the previous crawl's record (shared/crawl/recrawl).
func (h *Handler) offer(key string, p fetched, ref crawlstate.Page) {
	if h.handoff == nil || p.unchanged != nil {
		return
	}
	stored := storedPage(p.resp)
	stored.Header, stored.FetchedAt = warcfile.StoredHeader(stored), stored.FetchedAt.UTC()
	stored.Digest = p.record.PayloadDigest() // parse need not hash the body again
	h.handoff.Offer(message.Ref{Key: key, Offset: ref.Offset, Length: ref.Length}, stored)
}

// partBytes bounds the pages' share of one parse message, below message.MaxBytes, leaving room for
// the robots.txt rules that travel with them (robotsparse.go).
const partBytes = message.MaxBytes - 16<<10 - message.MaxRobotsBytes

// renderedBytes is the most the render step adds to a page of a parse message from the file at
// key: the location of its rendered DOM (a key a little longer than key, two numbers) or a render
// error.
func renderedBytes(key string) int {
	return len(`,"rendered":{"key":"","offset":,"length":},"renderError":""`) + len(key) + 2*20 + 64
}

// partition numbers the parse message each page goes in: consecutive pages, at most
// message.MaxPages and about partBytes of them in each, extra bytes a page more (the render
// step's, for a crawl that renders), and the robots.txt rules of their hosts in at most
// message.MaxRobotsBytes: a part of many hosts' pages (a batch of lone URLs of many hosts) would
// otherwise carry only the rules that fit, and the links the others disallow would be admitted
// and fetched only to be skipped (the realistic crawl of make cost admitted 435 of its 1,000
// hosts' /search so).
func partition(pages []fetched, refs []crawlstate.Page, extra int) []int {
	parts := make([]int, len(pages))
	part, n, size, rules := 0, 0, 0, 0
	hosts := map[string]bool{} // the hosts whose rules the part carries
	for i, p := range pages {
		b, err := json.Marshal(parsePage(p.msg, refs[i]))
		l := len(b) + extra
		if err != nil {
			l = partBytes // cannot happen for these types; a part of its own is safe
		}
		r := rulesBytes(p.robots, hosts)
		if n > 0 && (n == message.MaxPages || size+l > partBytes || rules+r > message.MaxRobotsBytes) {
			part, n, size, rules = part+1, 0, 0, 0
			hosts = map[string]bool{}
			r = rulesBytes(p.robots, hosts)
		}
		parts[i] = part
		n, size, rules = n+1, size+l+1, rules+r
		if r > 0 {
			hosts[p.robots.Hosts[0]] = true
		}
	}
	return parts
}

// rulesBytes is what a page's host's robots.txt rules add to a parse message whose part carries
// the rules of hosts already: nothing if it has them, or if they travel in no message.
func rulesBytes(r *message.RobotsRules, hosts map[string]bool) int {
	if r == nil || len(r.Hosts) != 1 || hosts[r.Hosts[0]] {
		return 0
	}
	b, err := json.Marshal(r)
	if err != nil || len(b)+1 > message.MaxRobotsBytes {
		return 0
	}
	return len(b) + 1
}

// assemble builds the batch's WARC file, to be stored at key, and its CDXJ index.
func assemble(key string, now time.Time, pages []fetched) (warcfile.File, error) {
	records := make([]warcfile.Record, len(pages))
	for i, p := range pages {
		records[i] = p.record
	}
	file, err := warcfile.Assemble(path.Base(key), now, records)
	if err != nil {
		return warcfile.File{}, fmt.Errorf("assemble %s: %w", key, err)
	}
	return file, nil
}

// putFile stores the batch's WARC file at key and, with IndexEachFile, its CDXJ index beside it
// (key plus warcfile.IndexSuffix: a second PUT per batch), and returns what makes them durable.
func (h *Handler) putFile(ctx context.Context, key string, file warcfile.File) (durable func() error, err error) {
	data, err := h.put(ctx, key, file.Data, warcfile.ContentType)
	if err != nil {
		return nil, fmt.Errorf("put %s: %w", key, err)
	}
	if !h.cfg.IndexEachFile {
		return data, nil
	}
	index, err := h.put(ctx, key+warcfile.IndexSuffix, file.Index, warcfile.IndexContentType)
	if err != nil {
		return nil, fmt.Errorf("put the index of %s: %w", key, errors.Join(err, data()))
	}
	return func() error { return errors.Join(data(), index()) }, nil
}

// putFileDurably stores the batch's WARC file and its index again, durably: after a failed sync.
func (h *Handler) putFileDurably(ctx context.Context, key string, file warcfile.File) error {
	if err := h.pages.Put(ctx, key, file.Data, warcfile.ContentType); err != nil || !h.cfg.IndexEachFile {
		return err
	}
	return h.pages.Put(ctx, key+warcfile.IndexSuffix, file.Index, warcfile.IndexContentType)
}

// put stores an object and returns what makes it durable: a store that can defer its sync
// (DeferredPutter) returns before the object is durable, any other only once it is.
func (h *Handler) put(ctx context.Context, key string, data []byte, contentType string) (durable func() error, err error) {
	if d, ok := h.pages.(DeferredPutter); ok {
		return d.PutDeferred(ctx, key, data, contentType)
	}
	return func() error { return nil }, h.pages.Put(ctx, key, data, contentType)
}

// parseMessage asks parse to read the one page stored for the fetch message m.
func parseMessage(crawl string, m *message.Fetch, p crawlstate.Page) message.Parse {
	return message.Parse{Header: message.Header{Crawl: crawl}, URL: m.URL, FinalURL: p.FinalURL, Root: seedRoot(m, p.FinalURL),
		Depth: m.Depth, Status: p.Status, ContentType: p.ContentType, FetchedAt: p.FetchedAt,
		WARC: message.Ref{Key: p.WARCKey, Offset: p.Offset, Length: p.Length}, Sitemap: m.Sitemap, Unchanged: p.Unchanged}
}

// parsePage is the page stored for the fetch message m, as a parse message of its file lists it.
func parsePage(m *message.Fetch, p crawlstate.Page) message.Page {
	return message.Page{URL: m.URL, FinalURL: p.FinalURL, Root: seedRoot(m, p.FinalURL), Depth: m.Depth,
		Status: p.Status, ContentType: p.ContentType, FetchedAt: p.FetchedAt, Offset: p.Offset, Length: p.Length, Sitemap: m.Sitemap,
		Unchanged: p.Unchanged}
}

// seedRoot is the scope root of the links found on m's page: m's own, except for a seed that
// redirected, whose links are scoped from where it landed (as if the target were the seed).
func seedRoot(m *message.Fetch, finalURL string) string {
	if m.Depth != 0 || finalURL == "" || finalURL == m.URL {
		return m.Root
	}
	u, err := urlnorm.Normalize(finalURL)
	if err != nil {
		return m.Root
	}
	return u.String()
}

// resendParse handles a fetch message for a URL that is already claimed or done. A URL fetched but
// not yet parsed gets its parse message again: the outbox's second half, for a fetch message
// delivered again after its page was stored. If its stored page is gone (the embedded store can
// lose a file to a power loss before the file's sync), the URL is taken back for owner and
// returned, to be fetched again.
func (h *Handler) resendParse(ctx context.Context, m *message.Fetch, key, owner string) (*crawlstate.URL, error) {
	u, err := h.urls.Get(ctx, m.Crawl, key)
	if errors.Is(err, table.ErrNotFound) {
		// No item: the admission that sent this message was taken back (frontier: its budget could
		// not be reserved), and the links message that carried the URL is delivered again to admit
		// it afresh, with a fetch message of its own. This one is stale.
		h.log.Info("dropping a fetch message whose URL is not admitted", "url", m.URL)
		return nil, nil
	}
	if err != nil || u.State != crawlstate.Fetched || u.Page == nil {
		return nil, err // nothing to resend (or a read error: the record is retried)
	}
	if parsed, err := h.urls.PageParsed(ctx, m.Crawl, u); parsed || err != nil {
		return nil, err
	}
	if err := h.checkStored(ctx, *u.Page); errors.Is(err, errPageGone) {
		h.log.Warn("fetching a page again: its stored copy is gone", "url", m.URL, "err", err.Error())
		again, err := h.claims.Refetch(ctx, m.Crawl, key, owner, h.cfg.Lease, u)
		if errors.Is(err, crawlstate.ErrClaimed) {
			return nil, nil // parsed, or fetched again, since it was read
		}
		if err != nil {
			return nil, err
		}
		return &again, nil
	} else if err != nil {
		return nil, fmt.Errorf("check the stored page of %s: %w", m.URL, err)
	}
	body, err := message.Encode(parseMessage(m.Crawl, m, *u.Page))
	if err != nil {
		return nil, err
	}
	q, _ := h.parseQueue(ctx, m.Crawl)
	if err := h.send.SendBatch(ctx, q, []queue.Entry{{ID: "0", Body: body}}); err != nil {
		return nil, fmt.Errorf("re-send the parse message of %s: %w", m.URL, err)
	}
	return nil, nil
}

// errPageGone says that a page recorded as fetched can no longer be read back.
var errPageGone = errors.New("the stored page is gone")

// checkStored reads p's WARC record back. It returns an error wrapping errPageGone when the record
// is missing, short or does not decode, and any other read error as it is (to be retried).
func (h *Handler) checkStored(ctx context.Context, p crawlstate.Page) error {
	raw, err := h.pages.GetRange(ctx, p.WARCKey, p.Offset, p.Length)
	switch {
	case errors.Is(err, blob.ErrNotFound), errors.Is(err, blob.ErrInvalidRange):
		return fmt.Errorf("%w: %w", errPageGone, err)
	case err != nil:
		return err
	case int64(len(raw)) != p.Length:
		return fmt.Errorf("%w: %s holds %d of its %d bytes", errPageGone, p.WARCKey, len(raw), p.Length)
	}
	if _, err := warcfile.Decode(raw); err != nil {
		return fmt.Errorf("%w: %s: %w", errPageGone, p.WARCKey, err)
	}
	return nil
}

// recordRedirectTarget marks the URL a redirect ended on as known, so that a link to it later does
// not fetch the same page again. It is an optimisation: a failure is only logged.
func (h *Handler) recordRedirectTarget(ctx context.Context, crawl string, p fetched) {
	final, err := urlnorm.Normalize(p.resp.URL)
	if err != nil || final.String() == p.msg.URL {
		return
	}
	key := urlnorm.Key(final.String())
	cause := errclass.Errorf(errclass.Dup, "fetched as the redirect target of %s", p.msg.URL)
	added, err := h.outcomes.Reject(ctx, crawl, key, final.String(), p.msg.Depth, cause)
	if err == nil && !added {
		// Queued but not yet claimed: skip it, in its group.
		var u crawlstate.URL
		if u, err = h.urls.Peek(ctx, crawl, key); err == nil {
			err = h.outcomes.SkipQueued(ctx, crawl, crawlstate.GroupOf(u), key, cause)
		}
	}
	if err != nil {
		h.log.Warn("record the redirect target", "url", final.String(), "err", err.Error())
	}
}

// batchID names one WARC file: random, so concurrent and repeated batches never collide.
func batchID() string { return strings.ToLower(rand.Text()) }
