// Package handoff passes fetched pages from fetch to parse when both handlers run in one process
// (`crawl run`), so that parse need not read back and decode the WARC record fetch has just
// written and synced. On Lambda the two handlers are separate functions and no handoff is wired:
// parse reads every page from the blob store.
//
// The handoff is only a shortcut. fetch offers a page after its WARC file is stored and before the
// parse message is sent, and parse takes it by the record's location (message.Ref); a page that is
// not there (never offered, refused, expired, or taken already) is read from the blob store, as it
// always can be. Nothing in it needs to survive a crash.
//
// A page it holds has not been parsed yet: fetch offers it before the page's first parse message
// goes out, only a fetch in this process offers it, and the first Take forgets it. So parse skips
// its check for a duplicate delivery when it takes a page.
//
// Its memory is bounded. When it is full it refuses new pages rather than evicting old ones: parse
// consumes pages in about the order fetch offered them, so the oldest are the next to be taken.
// Pages no one takes (their parse message failed to go out, say) expire.
package handoff

import (
	"container/list"
	"sync"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
)

// Defaults for New. With 16 MiB, a 10,000-page crawl of round eight (fetch running further ahead
// of parse) found the handoff full for 1,561 and 2,790 pages, which parse then read back from
// their WARC files; with 32 MiB it was about 3% faster, with 4% less CPU (docs/bench-history.md).
const (
	DefaultMaxBytes = 32 << 20
	DefaultMaxAge   = time.Minute
)

// entryOverhead is what a page costs beyond its body and header bytes, roughly.
const entryOverhead = 256

// Pages holds fetched pages until parse takes them. It is safe for concurrent use. A nil *Pages
// holds nothing: Offer refuses and Take finds nothing.
type Pages struct {
	maxBytes int64
	maxAge   time.Duration
	now      func() time.Time

	mu    sync.Mutex
	bytes int64
	order *list.List // of *entry, oldest first
	byRef map[message.Ref]*list.Element
}

type entry struct {
	ref     message.Ref
	page    warcfile.Page
	size    int64
	offered time.Time
}

// New returns a handoff that holds at most maxBytes of pages (DefaultMaxBytes if 0 or less), each
// for at most maxAge (DefaultMaxAge if 0 or less).
func New(maxBytes int64, maxAge time.Duration) *Pages {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	if maxAge <= 0 {
		maxAge = DefaultMaxAge
	}
	return &Pages{maxBytes: maxBytes, maxAge: maxAge, now: time.Now, order: list.New(),
		byRef: map[message.Ref]*list.Element{}}
}

// Offer holds p, stored at ref, for parse. It reports whether p was taken in: a full handoff, or
// one that holds ref already, refuses. The caller must not change p afterwards.
func (h *Pages) Offer(ref message.Ref, p warcfile.Page) bool {
	if h == nil {
		return false
	}
	size := pageSize(p)
	now := h.now()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.expire(now)
	if _, ok := h.byRef[ref]; ok || h.bytes+size > h.maxBytes {
		return false
	}
	h.byRef[ref] = h.order.PushBack(&entry{ref: ref, page: p, size: size, offered: now})
	h.bytes += size
	return true
}

// Take returns the page stored at ref and forgets it, or false if it is not held.
func (h *Pages) Take(ref message.Ref) (warcfile.Page, bool) {
	if h == nil {
		return warcfile.Page{}, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	el, ok := h.byRef[ref]
	if !ok {
		return warcfile.Page{}, false
	}
	e := h.remove(el)
	if h.now().Sub(e.offered) > h.maxAge {
		return warcfile.Page{}, false
	}
	return e.page, true
}

// Len returns how many pages are held, and their size in bytes.
func (h *Pages) Len() (pages int, bytes int64) {
	if h == nil {
		return 0, 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.order.Len(), h.bytes
}

// expire drops the pages held longer than maxAge. The list is in the order of offering, so they
// are at its front.
func (h *Pages) expire(now time.Time) {
	for el := h.order.Front(); el != nil; el = h.order.Front() {
		if now.Sub(el.Value.(*entry).offered) <= h.maxAge {
			return
		}
		h.remove(el)
	}
}

func (h *Pages) remove(el *list.Element) *entry {
	e := h.order.Remove(el).(*entry)
	delete(h.byRef, e.ref)
	h.bytes -= e.size
	return e
}

// pageSize estimates the memory p keeps alive.
func pageSize(p warcfile.Page) int64 {
	n := int64(cap(p.Body)) + int64(len(p.URL)) + entryOverhead
	for k, vs := range p.Header {
		n += int64(len(k))
		for _, v := range vs {
			n += int64(len(v))
		}
	}
	return n
}
