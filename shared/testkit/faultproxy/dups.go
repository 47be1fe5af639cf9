package faultproxy

import (
	"encoding/json"
	"strconv"
	"sync"
	"time"
)

// The SQS duplicates: a message twice in one ReceiveMessage answer (DupInReceive), and a copy of a
// message kept and put into a later answer from the same queue while the original is still
// invisible (DupLater).

// copyOf is a message kept for a later answer.
type copyOf struct {
	id, receipt string
	msg         json.RawMessage
	// until is when the original's visibility ends (moved by ChangeMessageVisibility).
	until   time.Time
	fromSeq uint64
}

// dupStore holds the copies kept, by queue URL.
type dupStore struct {
	mu     sync.Mutex
	queues map[string][]*copyOf
	kept   int
}

func newDupStore() *dupStore { return &dupStore{queues: map[string][]*copyOf{}} }

func (d *dupStore) keptCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.kept
}

// track forgets the copies whose original a request deletes or makes visible again, and moves the
// end of an original's visibility that a request changes.
func (d *dupStore) track(c call) {
	var in struct {
		ReceiptHandle     string
		VisibilityTimeout *int
		Entries           []struct {
			ReceiptHandle     string
			VisibilityTimeout *int
		}
	}
	switch c.op {
	case "DeleteMessage", "DeleteMessageBatch", "ChangeMessageVisibility", "ChangeMessageVisibilityBatch":
	default:
		return
	}
	if json.Unmarshal(c.body, &in) != nil {
		return
	}
	type change struct {
		receipt string
		vis     *int
	}
	changes := []change{{in.ReceiptHandle, in.VisibilityTimeout}}
	for _, e := range in.Entries {
		changes = append(changes, change{e.ReceiptHandle, e.VisibilityTimeout})
	}
	deleting := c.op == "DeleteMessage" || c.op == "DeleteMessageBatch"
	d.mu.Lock()
	defer d.mu.Unlock()
	kept := d.queues[c.queue][:0]
	for _, cp := range d.queues[c.queue] {
		drop := false
		for _, ch := range changes {
			if ch.receipt == "" || ch.receipt != cp.receipt {
				continue
			}
			switch {
			case deleting || ch.vis == nil || *ch.vis <= 0:
				drop = true
			default:
				cp.until = time.Now().Add(time.Duration(*ch.vis) * time.Second)
			}
		}
		if !drop {
			kept = append(kept, cp)
		}
	}
	d.queues[c.queue] = kept
}

// keep stores a copy of msg for a later answer.
func (d *dupStore) keep(queue string, cp *copyOf) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.queues[queue] = append(d.queues[queue], cp)
	d.kept++
}

// take returns a copy to put into an answer from queue that already holds the messages ids, or
// nil. Copies whose original's visibility has ended, or whose message is in the answer (so the
// original was visible again), are dropped.
func (d *dupStore) take(queue string, ids map[string]bool) *copyOf {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := time.Now()
	var out *copyOf
	kept := d.queues[queue][:0]
	for _, cp := range d.queues[queue] {
		switch {
		case !now.Before(cp.until) || ids[cp.id]:
		case out == nil:
			out = cp
		default:
			kept = append(kept, cp)
		}
	}
	d.queues[queue] = kept
	return out
}

// receiveAnswer is a ReceiveMessage answer: its messages, and every other field as it came.
type receiveAnswer struct {
	Messages []json.RawMessage `json:"Messages"`
}

// receiveFaults applies the duplicate faults to the answer body of ReceiveMessage request seq c:
// kind DupInReceive doubles a message, DupLater keeps one for later; and a copy kept earlier goes
// into the answer when no other fault hit the request. A message is only added to an answer with
// room for it (fewer messages than MaxNumberOfMessages), as SQS never sends more.
func (p *Proxy) receiveFaults(seq uint64, c call, kind Kind, body []byte) []byte {
	var top map[string]json.RawMessage
	var ans receiveAnswer
	if json.Unmarshal(body, &top) != nil || json.Unmarshal(body, &ans) != nil {
		return body
	}
	var in struct {
		MaxNumberOfMessages int
		VisibilityTimeout   int
	}
	_ = json.Unmarshal(c.body, &in)
	room := max(in.MaxNumberOfMessages, 1)
	ids := map[string]bool{}
	type head struct{ MessageId, ReceiptHandle string }
	heads := make([]head, len(ans.Messages))
	for i, m := range ans.Messages {
		_ = json.Unmarshal(m, &heads[i])
		ids[heads[i].MessageId] = true
	}
	changed := false
	switch {
	case kind == DupInReceive && len(ans.Messages) > 0 && len(ans.Messages) < room:
		i := int(seq % uint64(len(ans.Messages)))
		ans.Messages = append(ans.Messages, ans.Messages[i])
		p.record(seq, c, kind, "message "+heads[i].MessageId+" twice in one answer")
		changed = true
	case kind == DupLater && len(ans.Messages) > 0 && in.VisibilityTimeout > 0:
		i := int(seq % uint64(len(ans.Messages)))
		p.dups.keep(c.queue, &copyOf{id: heads[i].MessageId, receipt: heads[i].ReceiptHandle, msg: ans.Messages[i],
			until: time.Now().Add(time.Duration(in.VisibilityTimeout) * time.Second), fromSeq: seq})
	case kind == "" && len(ans.Messages) < room:
		if cp := p.dups.take(c.queue, ids); cp != nil {
			ans.Messages = append(ans.Messages, cp.msg)
			p.record(seq, c, DupLater, "copy of message "+cp.id+" received at seq "+strconv.FormatUint(cp.fromSeq, 10)+", original still invisible")
			changed = true
		}
	}
	if !changed {
		return body
	}
	msgs, err := json.Marshal(ans.Messages)
	if err != nil {
		return body
	}
	top["Messages"] = msgs
	out, err := json.Marshal(top)
	if err != nil {
		return body
	}
	return out
}
