package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/port/queue"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// classQueue is what a redrive by class needs of the queues.
type classQueue interface {
	queue.Sender
	Receive(ctx context.Context, queue string, max int, visibility, wait time.Duration) ([]queue.Message, error)
	Delete(ctx context.Context, queue, receiptHandle string) error
	ChangeVisibility(ctx context.Context, queue, receiptHandle string, timeout time.Duration) error
}

// redriveVisibility is how long a dead letter looked at stays out of sight during a pass, so that
// the pass does not see it twice; those left are made visible again at its end.
const redriveVisibility = 2 * time.Minute

// redriveByClass moves back to src the fetch messages of the dead-letter queue dlq whose URLs failed
// with one of the classes only, as their URL items record them; the others stay in dlq. A message of
// several URLs is split: its URLs of those classes go back alone, and the rest go back to dlq
// together, in one message. A message that does not decode, or whose URL has no item, stays.
// It returns how many URLs it moved and how many it left.
func redriveByClass(ctx context.Context, q classQueue, st *crawlstate.Store, dlq, src string, only map[errclass.Class]bool) (moved, left int, err error) {
	var stays []string // receipt handles of the messages left as they are
	defer func() {
		for _, h := range stays {
			if verr := q.ChangeVisibility(ctx, dlq, h, 0); verr != nil && err == nil {
				err = fmt.Errorf("make a dead letter left visible again: %w", verr)
			}
		}
	}()
	seen := map[string]bool{}
	ours := map[string]bool{} // the bodies this pass sent to dlq: what stays of a split message
	for {
		msgs, err := q.Receive(ctx, dlq, queue.MaxBatch, redriveVisibility, 0)
		if err != nil {
			return moved, left, fmt.Errorf("receive from the dead-letter queue: %w", err)
		}
		fresh := 0
		for _, m := range msgs {
			if seen[m.ID] {
				continue
			}
			seen[m.ID], fresh = true, fresh+1
			if ours[m.Body] {
				delete(ours, m.Body)
				stays = append(stays, m.ReceiptHandle) // counted when it was split off
				continue
			}
			back, keep, err := sortByClass(ctx, st, m.Body, only)
			if err != nil {
				return moved, left, err
			}
			if len(back) == 0 {
				left += keep.n
				stays = append(stays, m.ReceiptHandle)
				continue
			}
			if err := q.SendBatch(ctx, src, back); err != nil {
				return moved, left, fmt.Errorf("send back: %w", err)
			}
			if keep.n > 0 {
				if err := q.SendBatch(ctx, dlq, []queue.Entry{{ID: "0", Body: keep.body}}); err != nil {
					return moved, left, fmt.Errorf("keep the other URLs in the dead-letter queue: %w", err)
				}
				ours[keep.body] = true
			}
			if err := q.Delete(ctx, dlq, m.ReceiptHandle); err != nil {
				return moved, left, fmt.Errorf("delete a moved dead letter: %w", err)
			}
			moved, left = moved+len(back), left+keep.n
		}
		if fresh == 0 {
			return moved, left, nil
		}
	}
}

// kept is what stays in the dead-letter queue of one message: n URLs in body.
type kept struct {
	n    int
	body string
}

// sortByClass splits a dead fetch message into the one-URL messages to send back (their URL's class
// is in only) and what stays. With nothing to send back, what stays is the message as it is.
func sortByClass(ctx context.Context, st *crawlstate.Store, body string, only map[errclass.Class]bool) ([]queue.Entry, kept, error) {
	m, err := message.DecodeFetch(body)
	if err != nil {
		return nil, kept{n: 1, body: body}, nil
	}
	parts := m.Split()
	var back []queue.Entry
	var stay []message.Target
	for _, p := range parts {
		match, err := failedWith(ctx, st, p, only)
		if err != nil {
			return nil, kept{}, err
		}
		if !match {
			stay = append(stay, p.Target)
			continue
		}
		b, err := message.Encode(p)
		if err != nil {
			return nil, kept{}, fmt.Errorf("encode %s: %w", p.URL, err)
		}
		back = append(back, queue.Entry{ID: strconv.Itoa(len(back)), Body: b})
	}
	if len(back) == 0 {
		return nil, kept{n: len(parts), body: body}, nil
	}
	if len(stay) == 0 {
		return back, kept{}, nil
	}
	b, err := message.Encode(message.Pack(m.Crawl, stay))
	if err != nil {
		return nil, kept{}, fmt.Errorf("encode the URLs that stay: %w", err)
	}
	return back, kept{n: len(stay), body: b}, nil
}

// failedWith reports whether the URL of p is recorded with one of the classes only.
func failedWith(ctx context.Context, st *crawlstate.Store, p *message.Fetch, only map[errclass.Class]bool) (bool, error) {
	u, err := urlnorm.Normalize(p.URL)
	if err != nil {
		return false, nil
	}
	item, err := st.Get(ctx, p.Crawl, urlnorm.Key(u.String()))
	if errors.Is(err, table.ErrNotFound) {
		return false, nil // no item: nothing says its class; it stays
	}
	if err != nil {
		return false, err
	}
	return only[item.Class], nil
}
