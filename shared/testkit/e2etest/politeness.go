package e2etest

import (
	"context"
	"sync"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/local/localrun"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// The politeness scenarios (DESIGN invariant 4, and 5's Crawl-delay), which both backends must
// pass: waits that really happen, through the queue and in place, and never burn a receive.

// PageURLs returns the absolute URL of every page, to seed a crawl with: all of one host's
// fetch messages then arrive at once.
func (s *Site) PageURLs() []string {
	out := make([]string, s.Pages)
	for i := range out {
		out[i] = s.PageURL(i)
	}
	return out
}

// CheckPolitenessWaits crawls the site with every page a seed, at rps requests per second for
// its one host and with concurrency fetches in flight. The fetch messages arrive together, more
// of them than the host admits within the second a fetch may wait in place, so some must wait in
// the queue: they must have been re-sent with a delay, not failed (every dead-letter queue stays
// empty although maxReceiveCount is 2), every page must be fetched once, and the requests must
// keep the rate (CheckPoliteness with minGap and slack). The queues' maxReceiveCount and
// h.MaxReceive must be 2, so that a wait that burned receives would land in a DLQ.
func (h *Harness) CheckPolitenessWaits(rps float64, concurrency int, minGap, slack time.Duration) {
	t := h.T
	t.Helper()
	if h.MaxReceive != 2 {
		t.Fatalf("MaxReceive is %d: this check needs queues with maxReceiveCount 2", h.MaxReceive)
	}
	cfg := h.Config()
	cfg.HostRPS = rps
	ports := h.Ports()
	sent := &CountingSender{Sender: h.Queue, Queue: h.Res.Fetch, Slow: h.Res.FetchSlow}
	ports.Queue = sent
	crawl, err := h.Crawl(context.Background(), cfg, ports, h.Queue, concurrency, h.Site.PageURLs()...)
	if err != nil {
		t.Fatal(err)
	}
	h.CheckNothingLost(crawl) // also: every dead-letter queue is empty
	if r := h.Site.Repeats(); len(r) != 0 {
		t.Errorf("pages fetched more than once: %v", r)
	}
	t.Logf("%d of %d fetch messages were sent or re-sent with a delay to wait for the host", sent.Delayed.Load(), sent.Sent.Load())
	if sent.Delayed.Load() == 0 {
		t.Errorf("no fetch message was sent with a delay: the crawl forced no wait in the queue")
	}
	h.CheckPoliteness(time.Duration(float64(time.Second)/rps), minGap, slack)
}

// heldSlotLead is how far ahead of its slot CheckHeldSlotWaits delivers the message that holds
// it: the gap between two slots, under the second (the fetcher's MaxInlineWait) beyond which the
// fetcher re-queues a message early for its slot instead of waiting in place.
const heldSlotLead = 800 * time.Millisecond

// CheckHeldSlotWaits proves that a fetch message that holds its host's politeness slot and
// arrives early waits in place for it. This is what a message re-queued for a slot does: SQS
// delays are whole seconds, so it comes back up to a second early. The site must have one page.
//
// It reserves the host's slots through the crawl state, as a fetcher does: the slot that starts
// now (another worker's request) and the next one, heldSlotLead later, which it puts on the fetch
// queue with a message for the page (admitted as schedule admits a seed). The message is
// delivered at once, early, and the page must be requested no earlier than its slot, on the slot
// it holds: the next free slot afterwards is the one after it.
func (h *Harness) CheckHeldSlotWaits() {
	t := h.T
	t.Helper()
	if h.Site.Pages != 1 {
		t.Fatalf("the site has %d pages: this check wants the one page whose slot it holds", h.Site.Pages)
	}
	ctx := context.Background()
	u, err := urlnorm.Normalize(h.Site.PageURL(0))
	if err != nil {
		t.Fatal(err)
	}
	const crawl = "held-slot"
	key := urlnorm.Key(u.String())
	now := time.UnixMilli(time.Now().UnixMilli()) // the table keeps slots in whole milliseconds
	st := crawlstate.New(h.Table, crawlstate.WithClock(func() time.Time { return now }))
	if _, err := st.Admit(ctx, crawl, key, u.String(), u.String(), 0, "held-slot-seed"); err != nil {
		t.Fatal(err)
	}
	// The rate whose interval is heldSlotLead: the slot after the current one is that far ahead.
	cfg := h.Config()
	cfg.HostRPS = float64(time.Second) / float64(heldSlotLead)
	if w, err := st.ReserveSlot(ctx, u.Host, heldSlotLead); err != nil || w != 0 {
		t.Fatalf("the host's first slot is %v away (%v), want now", w, err)
	}
	w, err := st.ReserveSlot(ctx, u.Host, heldSlotLead)
	if err != nil || w != heldSlotLead {
		t.Fatalf("the host's second slot is %v away (%v), want %v", w, err, heldSlotLead)
	}
	slot := now.Add(w)
	body, err := message.Encode(message.Pack(crawl, []message.Target{{URL: u.String(), Root: u.String(), Slot: slot}}))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Queue.SendBatch(ctx, h.Res.Fetch, []queue.Entry{{ID: "held", Body: body}}); err != nil {
		t.Fatal(err)
	}

	arrivals := &firstReceive{Queues: h.Queue, queue: h.Res.Fetch}
	if err := h.Run(ctx, crawl, cfg, h.Ports(), arrivals, 4); err != nil {
		t.Fatal(err)
	}
	// The test proves something only if the message came early enough that a fetch without the
	// wait would go out before the slot: half the lead covers the claim and robots.txt.
	if at := arrivals.first(); at.IsZero() || slot.Sub(at) < heldSlotLead/2 {
		t.Fatalf("the message was delivered at %v, %v before its slot: want at least %v early (a stalled machine?)",
			at.Format(time.StampMilli), slot.Sub(at), heldSlotLead/2)
	}
	h.CheckNothingLost(crawl)
	times := h.Site.Times()
	if len(times) != 1 {
		t.Fatalf("the site saw %d page requests, want 1", len(times))
	}
	if early := slot.Sub(times[0]); early > 0 {
		t.Errorf("the page was requested %v before the slot its message held: the fetcher did not wait in place", early)
	} else {
		t.Logf("the message was delivered %v before its slot; the page was requested %v after it",
			slot.Sub(arrivals.first()), -early)
	}
	// The fetch used the slot it held and took no other, and the page's one new link
	// (/private/secret) took none either: parse refused it, since the robots.txt rules the fetcher
	// applied came with the page, and it was never admitted (were it admitted, as its host's lone
	// URL in its batch it would go without a slot, and the fetcher would find robots.txt disallows
	// it before it booked one). The next free slot is the one right after the held one.
	want := 2 * heldSlotLead
	if w, err := st.ReserveSlot(ctx, u.Host, heldSlotLead); err != nil || w != want {
		t.Errorf("after the fetch the host's next slot is %v away (%v), want %v: the message took a slot besides the one it held",
			w, err, want)
	}
}

// CheckCrawlDelay crawls the site, every page a seed, with no rate of its own (HostRPS 0) while
// robots.txt asks for delay between requests, with concurrency fetches in flight: every page is
// fetched once, nothing is lost, and the requests keep the delay (CheckPoliteness with minGap and
// slack).
func (h *Harness) CheckCrawlDelay(delay time.Duration, concurrency int, minGap, slack time.Duration) {
	t := h.T
	t.Helper()
	h.Site.CrawlDelay = delay
	cfg := h.Config()
	cfg.HostRPS = 0 // only Crawl-delay spaces the requests
	crawl, err := h.Crawl(context.Background(), cfg, h.Ports(), h.Queue, concurrency, h.Site.PageURLs()...)
	if err != nil {
		t.Fatal(err)
	}
	h.CheckNothingLost(crawl)
	if r := h.Site.Repeats(); len(r) != 0 {
		t.Errorf("pages fetched more than once: %v", r)
	}
	h.CheckPoliteness(delay, minGap, slack)
}

// firstReceive is the runner's queues, noting when a message was first received from one queue.
type firstReceive struct {
	localrun.Queues
	queue string

	mu sync.Mutex
	at time.Time
}

// Receive receives, and notes the time if these are the queue's first messages.
func (f *firstReceive) Receive(ctx context.Context, name string, maxMsgs int, visibility, wait time.Duration) ([]queue.Message, error) {
	msgs, err := f.Queues.Receive(ctx, name, maxMsgs, visibility, wait)
	if len(msgs) > 0 && name == f.queue {
		now := time.Now()
		f.mu.Lock()
		if f.at.IsZero() {
			f.at = now
		}
		f.mu.Unlock()
	}
	return msgs, err
}

func (f *firstReceive) first() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.at
}
