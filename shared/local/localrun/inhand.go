package localrun

import (
	"sync"

	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// The messages in hand: received and not yet done with, by queue and id, with the newest receipt
// handle of each.

// take records msgs as in hand and returns them, less those already in hand: a message whose
// visibility ran out while its batch waited or worked (a heartbeat that came late, or failed) is
// delivered again, and two copies of one message must never be worked on at once. Lambda never
// has that case, since its visibility timeout is six times the function's timeout. Here the copy
// is not worked on; its receipt handle, the message's newest, becomes the one that the batch in
// hand extends and deletes the message with.
func (r *Runner) take(queueName string, msgs []queue.Message) []queue.Message {
	kept := msgs[:0]
	for _, m := range msgs {
		h := &holding{receipt: m.ReceiptHandle}
		if v, held := r.inHand.LoadOrStore(inHandKey(queueName, m), h); held {
			v.(*holding).set(m.ReceiptHandle)
			continue
		}
		kept = append(kept, m)
	}
	return kept
}

// putDown forgets msgs, whose batch is done (deleted, or left to be delivered again).
func (r *Runner) putDown(queueName string, msgs []queue.Message) {
	for _, m := range msgs {
		r.inHand.Delete(inHandKey(queueName, m))
	}
}

// receipt is the newest receipt handle of m, a message in hand.
func (r *Runner) receipt(queueName string, m queue.Message) string {
	if v, ok := r.inHand.Load(inHandKey(queueName, m)); ok {
		return v.(*holding).get()
	}
	return m.ReceiptHandle
}

// inHandKey names message m of a queue in Runner.inHand.
func inHandKey(queueName string, m queue.Message) string { return queueName + "\x00" + m.ID }

// holding is a message in hand: its newest receipt handle.
type holding struct {
	mu      sync.Mutex
	receipt string
}

func (h *holding) set(receipt string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.receipt = receipt
}

func (h *holding) get() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.receipt
}
