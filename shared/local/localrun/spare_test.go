package localrun

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/port/turn"
)

// concurrency tracks how many handlers run at once, and the most that did.
type concurrency struct {
	mu        sync.Mutex
	now, most int
}

func (c *concurrency) enter() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now++
	c.most = max(c.most, c.now)
}

func (c *concurrency) leave() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now--
}

func (c *concurrency) max() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.most
}

// TestASpareTakesABatchWhileAHandlerWaits: with one poller, a batch whose handler gave its turn
// back does not hold up the next one (received ahead by the poller, taken by the spare).
func TestASpareTakesABatchWhileAHandlerWaits(t *testing.T) {
	q, src, _ := newQueue(t, 5)
	send(t, q, src, "waits", "quick")
	waiting, release := make(chan struct{}), make(chan struct{})
	quickDone := make(chan struct{})
	handler := func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		switch ev.Records[0].Body {
		case "waits":
			turn.GiveBack(ctx)
			turn.GiveBack(ctx) // twice: still one turn lent
			close(waiting)
			<-release
		case "quick":
			close(quickDone)
		}
		return events.SQSEventResponse{}, nil
	}
	// One poller: without the spare, "quick" waits for "waits" to return.
	r := &Runner{Queues: q, Log: quiet(), Sources: []Source{{Name: "work", Queue: src, Handler: handler,
		Pollers: 1, Spare: 1, BatchSize: 1, Visibility: time.Minute}}}
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background()) }()
	<-waiting
	select {
	case <-quickDone:
	case <-time.After(10 * time.Second):
		t.Fatal("the spare did not take the next batch while the first handler waited")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if v, nv, err := q.Depth(context.Background(), src); err != nil || v+nv != 0 {
		t.Errorf("queue holds %d+%d messages (%v), want both deleted", v, nv, err)
	}
}

// TestSparesWorkOnlyWhileTurnsAreLent: handlers that never give their turn back run one at a time
// with one poller, however many spares the source has.
func TestSparesWorkOnlyWhileTurnsAreLent(t *testing.T) {
	q, src, _ := newQueue(t, 5)
	send(t, q, src, slices.Repeat([]string{"m"}, 12)...)
	var c concurrency
	handler := func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		c.enter()
		defer c.leave()
		// Hold on until the poller has received its next batch ahead (two messages in flight, or
		// the last): a spare that worked without a lent turn would have received one by then too.
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			if v, nv, err := q.Depth(ctx, src); err == nil && (nv >= 2 || v == 0) {
				break
			}
			if time.Now().After(deadline) {
				t.Error("the poller received no batch ahead in 10s")
				break
			}
		}
		return events.SQSEventResponse{}, nil
	}
	r := &Runner{Queues: q, Log: quiet(), Sources: []Source{{Name: "work", Queue: src, Handler: handler,
		Pollers: 1, Spare: 3, BatchSize: 1, Visibility: time.Minute}}}
	if err := r.Run(context.Background()); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if got := c.max(); got != 1 {
		t.Errorf("%d handlers ran at once with no turn lent, want 1", got)
	}
}

// TestSparesAreBounded: when every handler waits, Pollers + Spare batches are handled at once and
// no more; the queue's count of messages in flight is the oracle for the batches in hand.
func TestSparesAreBounded(t *testing.T) {
	q, src, _ := newQueue(t, 5)
	send(t, q, src, slices.Repeat([]string{"m"}, 10)...)
	var c concurrency
	gate := make(chan struct{})
	handler := func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		c.enter()
		defer c.leave()
		turn.GiveBack(ctx)
		<-gate
		return events.SQSEventResponse{}, nil
	}
	const pollers, spare = 2, 3
	r := &Runner{Queues: q, Log: quiet(), Sources: []Source{{Name: "work", Queue: src, Handler: handler,
		Pollers: pollers, Spare: spare, BatchSize: 1, Visibility: time.Minute}}}
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background()) }()
	// Every poller and spare holds a waiting batch, and each poller one more received ahead.
	waitFor(t, "every poller and spare busy", func() bool {
		_, nv, err := q.Depth(context.Background(), src)
		return err == nil && c.max() == pollers+spare && nv == 2*pollers+spare
	})
	close(gate)
	if err := <-done; err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if got := c.max(); got != pollers+spare {
		t.Errorf("%d handlers ran at once, want at most Pollers+Spare = %d", got, pollers+spare)
	}
}
