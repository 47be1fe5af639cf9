package fetcher

import (
	"context"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/handler/sqsbatch"
	"github.com/crawlstack/crawlstack/shared/port/queue"
	"github.com/crawlstack/crawlstack/shared/port/turn"
)

// Topping up. An invocation of the slow lane lives as long as its longest run (lifetime.go): a
// polite host's run of a hundred URLs keeps it for a hundred seconds, most of them waiting. The
// event source mapping hands it no more work meanwhile, and with its two invocations at once (the
// least maximum concurrency it takes) the queue's other runs wait for one of them to end: in the
// realistic crawl, a minute or two, while their hosts sit idle, and the crawl's largest host
// waited so for its next run between invocations. So an invocation that its runs keep alive takes
// more messages from its own queue meanwhile (Deps.TopUp), and works on them as a batch of their
// own beside its first one: in the time it is billed for anyway.
//
// It receives only while its runs keep it at least Config.TopUpStay longer (10 s by default), with
// a long poll that ends before they do, and only while the function's deadline leaves topUpReserve: a lone URL's request
// with its quick retries, and the storing of its page, fit in that. The messages it takes are its
// own to delete, once their batch is done, but for those the batch reports failed: they come
// back when their visibility ends, as those of a batch the mapping handed over do. A message that
// is received twice (its delete was lost) finds its URLs claimed and recorded, as any copy does.

// DefaultTopUpStay is Config.TopUpStay's default.
const DefaultTopUpStay = 10 * time.Second

// Receiver takes messages from the handler's own queue and deletes them (queue.Receiver's share).
type Receiver interface {
	Receive(ctx context.Context, queue string, max int, visibility, wait time.Duration) ([]queue.Message, error)
	DeleteBatch(ctx context.Context, queue string, receiptHandles []string) error
}

const (
	// topUpReserve is the least time before the deadline for it to receive: a lone URL's request
	// (httpfetch's 30 s at most), its quick retries (MaxQuickRetry), and the batch's store.
	topUpReserve = time.Minute
	// topUpMaxWait is SQS's longest long poll.
	topUpMaxWait = 20 * time.Second
	// topUpBatch and topUpWindow gather a batch as the stack's event source mapping does: up to
	// 100 messages, for up to 2 s after the first (infra/crawlstack, DefaultFetchSlowFunction): a
	// batch costs a WARC file, a parse message and its groups' writes, however few its pages.
	topUpBatch  = 100
	topUpWindow = 2 * time.Second
)

// invocation is what one invocation's batches have booked (the last slot of any of their runs),
// and whether its work is done: its first batch, and every batch it took.
type invocation struct {
	mu    sync.Mutex
	until time.Time
	// firstDone is set when the mapping's batch is done; active counts the batches taken.
	firstDone bool
	active    int
	// wake is signalled when any of the above moves.
	wake chan struct{}
}

type invocationKey struct{}

// invocationOf returns the invocation of ctx, or nil (no top-up).
func invocationOf(ctx context.Context) *invocation {
	inv, _ := ctx.Value(invocationKey{}).(*invocation)
	return inv
}

// book notes a run's slots up to last.
func (inv *invocation) book(last time.Time) {
	if inv == nil {
		return
	}
	inv.update(func() { inv.until = later(inv.until, last) })
}

// update changes the invocation under its lock, and wakes its top-up loop.
func (inv *invocation) update(f func()) {
	inv.mu.Lock()
	f()
	inv.mu.Unlock()
	select {
	case inv.wake <- struct{}{}:
	default:
	}
}

// bookedUntil is the last slot the invocation's runs booked (zero for no invocation).
func (inv *invocation) bookedUntil() time.Time {
	if inv == nil {
		return time.Time{}
	}
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return inv.until
}

// done reports whether the invocation's work is done.
func (inv *invocation) done() bool {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return inv.firstDone && inv.active == 0
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Handle processes one SQS batch of fetch messages, topping the invocation up from its queue while
// its runs keep it (Deps.TopUp).
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	if h.topUp == nil {
		return h.handle(ctx, ev), nil
	}
	inv := &invocation{wake: make(chan struct{}, 1)}
	ctx = context.WithValue(ctx, invocationKey{}, inv)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		h.topUpWhile(ctx, inv)
	}()
	resp := h.handle(ctx, ev)
	inv.update(func() { inv.firstDone = true })
	wg.Wait()
	return resp, nil
}

// topUpWhile receives and works on more batches while the invocation's runs keep it, until its
// work is done.
func (h *Handler) topUpWhile(ctx context.Context, inv *invocation) {
	var subs sync.WaitGroup
	defer subs.Wait()
	for !inv.done() {
		if wait, ok := h.topUpWait(ctx, inv); ok {
			msgs, err := h.topUpReceive(ctx, wait)
			if err != nil {
				h.log.Warn("top up the invocation from its queue", "received", len(msgs), "err", err.Error())
			}
			if len(msgs) > 0 {
				inv.update(func() { inv.active++ })
				subs.Add(1)
				go func() {
					defer subs.Done()
					h.topUpBatch(ctx, msgs)
					inv.update(func() { inv.active-- })
				}()
			}
			if err == nil {
				continue
			}
		}
		t := time.NewTimer(time.Second) // look again when something moves, or in a second
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-inv.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// topUpWait reports whether the invocation may receive now, and how long its long poll may wait.
func (h *Handler) topUpWait(ctx context.Context, inv *invocation) (time.Duration, bool) {
	if turn.Stopping(ctx) || ctx.Err() != nil {
		return 0, false
	}
	now := h.now()
	if dl, ok := ctx.Deadline(); !ok || dl.Sub(now) < topUpReserve {
		return 0, false // no deadline (crawl run): no visibility to give the messages it takes
	}
	stay, least := inv.bookedUntil().Sub(now), h.cfg.TopUpStay
	if least <= 0 {
		least = DefaultTopUpStay
	}
	if stay < least {
		return 0, false
	}
	return min(stay-least/2, topUpMaxWait).Truncate(time.Second), true
}

// topUpReceive gathers a batch as the event source mapping does: a long poll of up to wait for
// its first message, then more for up to topUpWindow, until it holds topUpBatch.
func (h *Handler) topUpReceive(ctx context.Context, wait time.Duration) ([]queue.Message, error) {
	vis := h.topUpVisibility(ctx)
	msgs, err := h.topUp.Receive(ctx, h.cfg.FetchQueue, queue.MaxBatch, vis, wait)
	end := h.now().Add(topUpWindow)
	for err == nil && len(msgs) > 0 && len(msgs) < topUpBatch {
		left := end.Sub(h.now()).Truncate(time.Second)
		if left <= 0 {
			break
		}
		var more []queue.Message
		more, err = h.topUp.Receive(ctx, h.cfg.FetchQueue, min(queue.MaxBatch, topUpBatch-len(msgs)), vis, left)
		if len(more) == 0 {
			break
		}
		msgs = append(msgs, more...)
	}
	return msgs, err
}

// topUpVisibility is how long the messages received stay hidden: until the invocation's deadline
// and a minute more, so that those of an invocation that dies come back soon after it. Only an
// invocation with a deadline tops up (topUpWait).
func (h *Handler) topUpVisibility(ctx context.Context) time.Duration {
	dl, _ := ctx.Deadline()
	return dl.Sub(h.now()).Truncate(time.Second) + time.Minute
}

// topUpBatch works on msgs as a batch of their own, and deletes those it did not fail.
func (h *Handler) topUpBatch(ctx context.Context, msgs []queue.Message) {
	resp := h.handle(ctx, sqsbatch.Event(h.cfg.FetchQueue, msgs))
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	var done []string
	for _, m := range msgs {
		if !failed[m.ID] {
			done = append(done, m.ReceiptHandle)
		}
	}
	if len(done) == 0 {
		return
	}
	if err := h.topUp.DeleteBatch(context.WithoutCancel(ctx), h.cfg.FetchQueue, done); err != nil {
		h.log.Warn("delete the messages the invocation took from its queue; they come back, and find their URLs done",
			"messages", len(done), "err", err.Error())
	}
	h.log.Debug("topped up", "messages", len(msgs), "failed", len(failed))
}
