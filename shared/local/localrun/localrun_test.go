package localrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/local/sqlite"
	"github.com/crawlstack/crawlstack/shared/port/queue"
	"github.com/crawlstack/crawlstack/shared/port/turn"
)

func newQueue(t *testing.T, maxReceive int) (*sqlite.Queue, string, string) {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "q.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	q := db.Queue()
	ctx := context.Background()
	dlq, err := q.CreateQueue(ctx, "work-dlq", queue.Config{Visibility: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	src, err := q.CreateQueue(ctx, "work", queue.Config{Visibility: time.Second, DeadLetter: dlq, MaxReceiveCount: maxReceive})
	if err != nil {
		t.Fatal(err)
	}
	return q, src, dlq
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func send(t *testing.T, q *sqlite.Queue, name string, bodies ...string) {
	t.Helper()
	var e []queue.Entry
	for i, b := range bodies {
		e = append(e, queue.Entry{ID: string(rune('a' + i)), Body: b})
	}
	if err := q.SendBatch(context.Background(), name, e); err != nil {
		t.Fatal(err)
	}
}

func TestRunDeletesSuccessesAndRedeliversFailures(t *testing.T) {
	q, src, dlq := newQueue(t, 3)
	send(t, q, src, "ok", "flaky", "poison", "boom")
	var mu sync.Mutex
	seen := map[string][]int{} // body -> receive counts
	handler := func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		var resp events.SQSEventResponse
		for _, r := range ev.Records {
			if r.EventSource != "aws:sqs" || r.Attributes["ApproximateReceiveCount"] == "" {
				t.Errorf("record is not shaped like Lambda's: %+v", r)
			}
			mu.Lock()
			seen[r.Body] = append(seen[r.Body], len(seen[r.Body])+1)
			n := len(seen[r.Body])
			mu.Unlock()
			if r.Body == "boom" {
				panic("handler bug")
			}
			if r.Body == "poison" || (r.Body == "flaky" && n == 1) {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
			}
		}
		return resp, nil
	}
	r := &Runner{Queues: q, Log: quiet(), Sources: []Source{{Name: "work", Queue: src, Handler: handler, Pollers: 1, BatchSize: 1, Visibility: time.Second}}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.Run(ctx); err != nil {
		t.Fatalf("Run = %v, want nil once the queue is empty", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen["ok"]) != 1 || len(seen["flaky"]) != 2 {
		t.Errorf("deliveries: ok %d, flaky %d; want 1 and 2", len(seen["ok"]), len(seen["flaky"]))
	}
	if len(seen["poison"]) != 3 || len(seen["boom"]) != 3 {
		t.Errorf("poison and panicking records were delivered %d and %d times, want maxReceiveCount (3)", len(seen["poison"]), len(seen["boom"]))
	}
	if v, nv, err := q.Depth(context.Background(), dlq); err != nil || v+nv != 2 {
		t.Errorf("DLQ holds %d messages (%v), want the 2 that always failed", v+nv, err)
	}
	if r.Stats.Panics.Load() == 0 {
		t.Error("the panic was not counted")
	}
}

func TestHeartbeatKeepsALongBatchInvisible(t *testing.T) {
	q, src, _ := newQueue(t, 5)
	send(t, q, src, "slow")
	started := make(chan struct{})
	release := make(chan struct{})
	var calls sync.Map
	handler := func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		n, _ := calls.LoadOrStore(ev.Records[0].Body, new(int))
		*(n.(*int))++
		if *(n.(*int)) == 1 {
			close(started)
			<-release // outlive the 1 s visibility timeout several times
		}
		return events.SQSEventResponse{}, nil
	}
	r := &Runner{Queues: q, Log: quiet(), Sources: []Source{{Name: "work", Queue: src, Handler: handler, Pollers: 2, BatchSize: 1, Visibility: time.Second}}}
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background()) }()
	<-started
	// For three visibility timeouts, the message must stay in flight: never visible again.
	deadline := time.After(3 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
watch:
	for {
		select {
		case <-deadline:
			break watch
		case <-tick.C:
			if v, _, err := q.Depth(context.Background(), src); err != nil || v != 0 {
				t.Errorf("the message became visible while its handler ran (visible %d, %v)", v, err)
				break watch
			}
		}
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	n, _ := calls.Load("slow")
	if got := *(n.(*int)); got != 1 {
		t.Errorf("the handler ran %d times, want 1", got)
	}
}

// missingBeats fails every other ChangeVisibility call, the heartbeat's, and counts how many
// times each message is received: a throttled heartbeat, as SQS gives one now and then.
type missingBeats struct {
	*sqlite.Queue
	beats    atomic.Int64
	mu       sync.Mutex
	receives map[string]int
}

func (m *missingBeats) ChangeVisibility(ctx context.Context, name, receipt string, timeout time.Duration) error {
	if m.beats.Add(1)%2 == 1 {
		return errors.New("change visibility: throttled")
	}
	return m.Queue.ChangeVisibility(ctx, name, receipt, timeout)
}

func (m *missingBeats) Receive(ctx context.Context, name string, n int, visibility, wait time.Duration) ([]queue.Message, error) {
	msgs, err := m.Queue.Receive(ctx, name, n, visibility, wait)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, msg := range msgs {
		m.receives[msg.Body]++
	}
	return msgs, err
}

// TestAHeartbeatThatFailsOnceKeepsTheMessageInvisible: with every other heartbeat failing, a
// batch that outlives its visibility timeout several times is received once. A message received
// again while in hand is not worked on twice (take), but its receive count grows towards the
// queue's maxReceiveCount as if its handler had failed: a heartbeat every half timeout lost the
// message for a moment at each missed beat.
func TestAHeartbeatThatFailsOnceKeepsTheMessageInvisible(t *testing.T) {
	sq, src, _ := newQueue(t, 5)
	send(t, sq, src, "slow")
	q := &missingBeats{Queue: sq, receives: map[string]int{}}
	release := make(chan struct{})
	handler := func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
		<-release
		return events.SQSEventResponse{}, nil
	}
	r := &Runner{Queues: q, Log: quiet(), Sources: []Source{{Name: "work", Queue: src, Handler: handler, Pollers: 2, BatchSize: 1, Visibility: time.Second}}}
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background()) }()
	// Hold the batch until its heartbeat has been tried 8 times (4 missed): about three
	// visibility timeouts.
	deadline := time.Now().Add(20 * time.Second)
	for q.beats.Load() < 8 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // a poll of the heartbeat's count, not a wait for an outcome
	}
	close(release)
	waitRun(t, done)
	if n := q.beats.Load(); n < 8 {
		t.Fatalf("%d heartbeats in 20 s, want 8", n)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if got := q.receives["slow"]; got != 1 {
		t.Errorf("the message was received %d times while its batch was in hand, want 1", got)
	}
}

// blindQueues hands out one message and then reports every queue empty, even while that message
// is being handled: what a look at several queues can see while a handler moves a message from a
// queue not yet counted to one already counted.
type blindQueues struct {
	queue.Receiver
	once  sync.Once
	looks atomic.Int64
}

func (b *blindQueues) Receive(ctx context.Context, _ string, _ int, _, wait time.Duration) ([]queue.Message, error) {
	var msgs []queue.Message
	b.once.Do(func() { msgs = []queue.Message{{ID: "1", ReceiptHandle: "r1", Body: "x", ReceiveCount: 1}} })
	if msgs != nil {
		return msgs, nil
	}
	select {
	case <-ctx.Done():
	case <-time.After(wait):
	}
	return nil, nil
}

func (b *blindQueues) DeleteBatch(context.Context, string, []string) error { return nil }

func (b *blindQueues) Depth(context.Context, string) (int, int, error) {
	b.looks.Add(1)
	return 0, 0, nil
}

// waitRun waits for Run's result on done, which must come within 10 s and be nil.
func waitRun(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not end once its work was done")
	}
}

func TestRunWaitsForTheBatchInHand(t *testing.T) {
	q := &blindQueues{}
	started, release := make(chan struct{}), make(chan struct{})
	var handled atomic.Bool
	handler := func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
		close(started)
		<-release
		handled.Store(true)
		return events.SQSEventResponse{}, nil
	}
	r := &Runner{Queues: q, Log: quiet(), IdleCheck: time.Millisecond,
		Sources: []Source{{Name: "work", Queue: "work", Handler: handler, Pollers: 1, BatchSize: 1}}}
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background()) }()
	<-started
	// Many checks go by while the handler holds its batch: none may end the run.
	before := r.Stats.IdleChecks.Load()
	deadline := time.Now().Add(10 * time.Second)
	for r.Stats.IdleChecks.Load() < before+5 && len(done) == 0 && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	select {
	case err := <-done:
		t.Fatalf("Run returned (%v) while a handler still held its batch", err)
	default:
	}
	if n := r.Stats.IdleChecks.Load() - before; n < 5 {
		t.Fatalf("only %d idle checks in 10 s", n)
	}
	close(release)
	waitRun(t, done)
	if !handled.Load() {
		t.Error("Run ended before the handler finished")
	}
}

// TestTheNextBatchIsReceivedWhileTheHandlerWorks checks that a poller receives its next batch while
// the handler still works on the current one, and keeps that batch invisible until it is handled.
func TestTheNextBatchIsReceivedWhileTheHandlerWorks(t *testing.T) {
	q, src, _ := newQueue(t, 5)
	send(t, q, src, "first", "second")
	started, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var handled []string
	handler := func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		mu.Lock()
		first := len(handled) == 0
		mu.Unlock()
		if first {
			close(started)
			<-release
		}
		mu.Lock()
		handled = append(handled, ev.Records[0].Body)
		mu.Unlock()
		return events.SQSEventResponse{}, nil
	}
	// The visibility timeout is 1 s: the batch received ahead must outlive it, by its heartbeat.
	r := &Runner{Queues: q, Log: quiet(), IdleCheck: 10 * time.Millisecond,
		Sources: []Source{{Name: "work", Queue: src, Handler: handler, Pollers: 1, BatchSize: 1, Visibility: time.Second}}}
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background()) }()
	<-started
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for {
		visible, inFlight, err := q.Depth(ctx, src)
		if err != nil {
			t.Fatal(err)
		}
		if visible == 0 && inFlight == 2 {
			break // both received: one in the handler, one waiting
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d visible, %d in flight while the first batch is handled; want the second received ahead", visible, inFlight)
		}
		runtime.Gosched()
	}
	// Past several visibility timeouts, the waiting batch must still be in flight, not visible.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for until := time.Now().Add(2500 * time.Millisecond); time.Now().Before(until); <-tick.C {
		if visible, _, err := q.Depth(ctx, src); err != nil || visible != 0 {
			t.Fatalf("the batch received ahead became visible again (%d visible, %v)", visible, err)
		}
	}
	close(release)
	waitRun(t, done)
	if !slices.Equal(handled, []string{"first", "second"}) {
		t.Errorf("handled %v, want first then second, once each", handled)
	}
	if v, nv, err := q.Depth(ctx, src); err != nil || v+nv != 0 {
		t.Errorf("%d messages left (%v), want both deleted", v+nv, err)
	}
}

// On the embedded queue, which counts every queue in one look, the run ends as soon as the last
// batch is done: no idle tick is due (IdleCheck is an hour), and one empty look suffices.
func TestRunEndsAsSoonAsTheLastBatchIsDone(t *testing.T) {
	q, src, _ := newQueue(t, 5)
	send(t, q, src, "a", "b", "c")
	var handled atomic.Int64
	handler := func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		handled.Add(int64(len(ev.Records)))
		return events.SQSEventResponse{}, nil
	}
	r := &Runner{Queues: q, Log: quiet(), IdleCheck: time.Hour,
		Sources: []Source{{Name: "work", Queue: src, Handler: handler, Pollers: 2, BatchSize: 1, Visibility: time.Second}}}
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background()) }()
	waitRun(t, done)
	if n := handled.Load(); n != 3 {
		t.Errorf("%d messages handled, want 3", n)
	}
	if v, nv, err := q.Depth(context.Background(), src); err != nil || v+nv != 0 {
		t.Errorf("the queue holds %d messages (%v) after the run, want none", v+nv, err)
	}
}

// failingLooks is an empty queue backend whose looks at the depth fail: the first failures
// looks, or every look when failures is negative.
type failingLooks struct {
	queue.Receiver
	failures int64
	looks    atomic.Int64
}

func (f *failingLooks) Receive(ctx context.Context, _ string, _ int, _, wait time.Duration) ([]queue.Message, error) {
	select {
	case <-ctx.Done():
	case <-time.After(wait):
	}
	return nil, nil
}

func (f *failingLooks) Depth(context.Context, string) (int, int, error) {
	if n := f.looks.Add(1); f.failures < 0 || n <= f.failures {
		return 0, 0, errors.New("throttled")
	}
	return 0, 0, nil
}

func TestAFailedLookAtTheQueuesIsTriedAgain(t *testing.T) {
	for _, tc := range []struct {
		name     string
		failures int64
		wantErr  bool
	}{
		{"a few failures, then empty: the run ends well", MaxFailedLooks - 1, false},
		{"every look fails: the run ends with the error", -1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := &failingLooks{failures: tc.failures}
			r := &Runner{Queues: q, Log: quiet(), IdleCheck: time.Millisecond, Sources: []Source{{Name: "work", Queue: "work",
				Handler: func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
					return events.SQSEventResponse{}, nil
				}}}}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := r.Run(ctx)
			if ctx.Err() != nil {
				t.Fatal("Run did not end within 10 s")
			}
			if got := err != nil; got != tc.wantErr {
				t.Fatalf("Run = %v, want an error %v", err, tc.wantErr)
			}
			if tc.wantErr && !strings.Contains(err.Error(), "throttled") {
				t.Errorf("Run = %v, want the look's error in it", err)
			}
			if n := q.looks.Load(); tc.wantErr && n != MaxFailedLooks {
				t.Errorf("looked %d times, want %d", n, MaxFailedLooks)
			}
		})
	}
}

// lapsingQueue hands out message "1" on every receive, with a fresh receipt handle, as a queue
// does when the message's visibility runs out while its batch is still in hand.
type lapsingQueue struct {
	queue.Receiver
	receives atomic.Int64
	mu       sync.Mutex
	deleted  []string
}

func (l *lapsingQueue) Receive(ctx context.Context, _ string, _ int, _, _ time.Duration) ([]queue.Message, error) {
	n := l.receives.Add(1)
	return []queue.Message{{ID: "1", ReceiptHandle: "r" + strconv.FormatInt(n, 10), Body: "x", ReceiveCount: int(n)}}, nil
}

func (l *lapsingQueue) DeleteBatch(_ context.Context, _ string, receipts []string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.deleted = append(l.deleted, receipts...)
	return nil
}

func (l *lapsingQueue) Depth(context.Context, string) (int, int, error) { return 1, 0, nil }

// ChangeVisibility has nothing to change: every receive hands the message out again anyway.
func (l *lapsingQueue) ChangeVisibility(context.Context, string, string, time.Duration) error {
	return nil
}

// TestACopyOfAMessageInHandIsNotWorkedOn: while a handler works on a message, the queue delivers
// it again (its visibility ran out) to the other pollers: the copies are left alone, so no two
// invocations ever work on one message at once, and the message is deleted with its newest
// receipt handle (an older one would leave it in the queue, to be delivered once more).
func TestACopyOfAMessageInHandIsNotWorkedOn(t *testing.T) {
	q := &lapsingQueue{}
	var inFlight, most, calls atomic.Int64
	var first atomic.Value // the receipt handle the first invocation was given
	handler := func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		first.CompareAndSwap(nil, ev.Records[0].ReceiptHandle)
		calls.Add(1)
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		// Hold the message until the other pollers have received it again several times.
		deadline := time.Now().Add(5 * time.Second)
		for q.receives.Load() < 20 && time.Now().Before(deadline) {
			runtime.Gosched()
		}
		return events.SQSEventResponse{}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Runner{Queues: q, Log: quiet(), Sources: []Source{{Name: "work", Queue: "work", Handler: handler, Pollers: 4}}}
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for calls.Load() < 3 && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	cancel()
	<-done
	if calls.Load() < 3 {
		t.Fatalf("the handler ran %d times in 10 s, want at least 3", calls.Load())
	}
	if m := most.Load(); m != 1 {
		t.Errorf("%d invocations worked on message 1 at once, want 1", m)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.deleted) == 0 {
		t.Fatal("nothing was deleted")
	}
	// The first invocation held the message while copies came: its delete must use a newer handle.
	if got := q.deleted[0]; got == first.Load() {
		t.Errorf("the first delete used %s, the handle the handler was given, not the newest copy's", got)
	}
}

// countingQueue counts the receives and deletes that reach an embedded queue, and can send more
// messages to it right after the first receive that returns any (as if they arrived then).
type countingQueue struct {
	*sqlite.Queue
	mu         sync.Mutex
	receives   []int // messages each receive returned
	asked      []int // the most each receive asked for
	firstAt    time.Time
	deleted    int
	afterFirst func()
}

func (c *countingQueue) Receive(ctx context.Context, name string, limit int, vis, wait time.Duration) ([]queue.Message, error) {
	msgs, err := c.Queue.Receive(ctx, name, limit, vis, wait)
	c.mu.Lock()
	c.asked = append(c.asked, limit)
	c.receives = append(c.receives, len(msgs))
	first := len(msgs) > 0 && c.firstAt.IsZero()
	if first {
		c.firstAt = time.Now()
	}
	after := c.afterFirst
	c.mu.Unlock()
	if first && after != nil {
		after()
	}
	return msgs, err
}

func (c *countingQueue) DeleteBatch(ctx context.Context, name string, receipts []string) error {
	c.mu.Lock()
	c.deleted += len(receipts)
	c.mu.Unlock()
	return c.Queue.DeleteBatch(ctx, name, receipts)
}

// batchRecorder is a handler that records the size of every batch and when it came.
type batchRecorder struct {
	mu    sync.Mutex
	sizes []int
	at    []time.Time
}

func (b *batchRecorder) handle(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sizes = append(b.sizes, len(ev.Records))
	b.at = append(b.at, time.Now())
	return events.SQSEventResponse{}, nil
}

func bodies(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "m" + strconv.Itoa(i)
	}
	return out
}

// runWithin runs r and fails the test if it does not end well within 20 s.
func runWithin(t *testing.T, r *Runner) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := r.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// TestABatchGathersSeveralReceives: a batch larger than one receive is gathered from several, each
// asking for at most 10, and handed to the handler once, as soon as it is full (the window is far
// longer than the test); its deletes leave the queue empty.
func TestABatchGathersSeveralReceives(t *testing.T) {
	sq, src, _ := newQueue(t, 5)
	// 10 + 10 + 5 from three senders, so that no single send is larger than SQS allows.
	all := bodies(25)
	send(t, sq, src, all[:10]...)
	send(t, sq, src, all[10:20]...)
	send(t, sq, src, all[20:]...)
	q := &countingQueue{Queue: sq}
	var rec batchRecorder
	r := &Runner{Queues: q, Log: quiet(), Sources: []Source{{Name: "work", Queue: src, Handler: rec.handle,
		Pollers: 1, BatchSize: 25, Window: time.Hour, Visibility: time.Minute}}}
	runWithin(t, r)
	if !slices.Equal(rec.sizes, []int{25}) {
		t.Errorf("batches of %v, want one of 25", rec.sizes)
	}
	for i, n := range q.asked {
		if n > queue.MaxBatch {
			t.Errorf("receive %d asked for %d messages, more than SQS's %d", i+1, n, queue.MaxBatch)
		}
	}
	if q.deleted != 25 {
		t.Errorf("%d deleted, want 25", q.deleted)
	}
	if v, nv, err := sq.Depth(context.Background(), src); err != nil || v+nv != 0 {
		t.Errorf("%d messages left (%v), want none", v+nv, err)
	}
}

// TestMessagesThatComeDuringTheWindowJoinTheBatch: messages sent after the batch's first receive,
// within its window, go into the same batch.
func TestMessagesThatComeDuringTheWindowJoinTheBatch(t *testing.T) {
	sq, src, _ := newQueue(t, 5)
	send(t, sq, src, "early-1", "early-2")
	q := &countingQueue{Queue: sq}
	q.afterFirst = func() { send(t, sq, src, "late-1", "late-2", "late-3") }
	var rec batchRecorder
	r := &Runner{Queues: q, Log: quiet(), Sources: []Source{{Name: "work", Queue: src, Handler: rec.handle,
		Pollers: 1, BatchSize: 5, Window: time.Hour, Visibility: time.Minute}}}
	runWithin(t, r)
	if !slices.Equal(rec.sizes, []int{5}) {
		t.Errorf("batches of %v, want one of 5 (2 early, 3 late)", rec.sizes)
	}
}

// TestTheWindowHandsOverABatchThatIsNotFull: a batch that cannot fill is handed over once its
// window has passed since its first message, not before.
func TestTheWindowHandsOverABatchThatIsNotFull(t *testing.T) {
	sq, src, _ := newQueue(t, 5)
	send(t, sq, src, "a", "b", "c")
	q := &countingQueue{Queue: sq}
	var rec batchRecorder
	const window = 300 * time.Millisecond
	r := &Runner{Queues: q, Log: quiet(), Sources: []Source{{Name: "work", Queue: src, Handler: rec.handle,
		Pollers: 1, BatchSize: 100, Window: window, Visibility: time.Minute}}}
	runWithin(t, r)
	if !slices.Equal(rec.sizes, []int{3}) {
		t.Fatalf("batches of %v, want one of 3", rec.sizes)
	}
	if waited := rec.at[0].Sub(q.firstAt); waited < window {
		t.Errorf("the batch was handed over %v after its first message, before its %v window", waited, window)
	}
}

// TestNoWindowHandsOverOneReceive: with no window, a batch is what one receive returns, at most 10
// however large BatchSize is.
func TestNoWindowHandsOverOneReceive(t *testing.T) {
	sq, src, _ := newQueue(t, 5)
	all := bodies(20)
	send(t, sq, src, all[:10]...)
	send(t, sq, src, all[10:]...)
	q := &countingQueue{Queue: sq}
	var rec batchRecorder
	r := &Runner{Queues: q, Log: quiet(), Sources: []Source{{Name: "work", Queue: src, Handler: rec.handle,
		Pollers: 1, BatchSize: 100, Visibility: time.Minute}}}
	runWithin(t, r)
	total := 0
	for _, n := range rec.sizes {
		if n > queue.MaxBatch {
			t.Errorf("a batch of %d with no window, want at most %d", n, queue.MaxBatch)
		}
		total += n
	}
	if total != 20 || len(rec.sizes) < 2 {
		t.Errorf("batches of %v, want 20 records in two or more", rec.sizes)
	}
}

// TestTheFirstRecordsStayInvisibleThroughTheWindow: the records a batch gathered first wait out
// its window in flight, kept invisible by their heartbeat even when the window is longer than the
// visibility timeout.
func TestTheFirstRecordsStayInvisibleThroughTheWindow(t *testing.T) {
	sq, src, _ := newQueue(t, 5)
	send(t, sq, src, "first")
	var rec batchRecorder
	var handled atomic.Bool
	handler := func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		defer handled.Store(true)
		return rec.handle(ctx, ev)
	}
	r := &Runner{Queues: sq, Log: quiet(), Sources: []Source{{Name: "work", Queue: src, Handler: handler,
		Pollers: 1, BatchSize: 100, Window: 2500 * time.Millisecond, Visibility: time.Second}}}
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background()) }()
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for !handled.Load() && time.Now().Before(deadline) {
		// busy is read before the depth: a batch counted busy was received before the look, so its
		// record is invisible then. Read after, it could count a receive that came after the look.
		busy := r.busy.Load()
		visible, _, err := sq.Depth(ctx, src)
		if err != nil {
			t.Fatal(err)
		}
		if visible != 0 && busy != 0 {
			t.Fatalf("a record in a gathering batch became visible again")
		}
		runtime.Gosched()
	}
	waitRun(t, done)
	if !slices.Equal(rec.sizes, []int{1}) {
		t.Errorf("batches of %v, want one of 1", rec.sizes)
	}
}

// waitFor polls cond until it holds, or fails the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10s for %s", what)
		}
		time.Sleep(time.Millisecond) // a poll interval, with the deadline above
	}
}

// TestAGracefulStopFinishesWhatIsInFlight stops a run while one batch is in its handler and the
// next is received ahead: the one in hand finishes under a live context and is deleted, the one
// ahead is given back (visible at once, though its visibility timeout is 30 s), and nothing else
// is received. The queue's own counts are the oracle. The handler in flight sees turn.Stopping
// from the stop on, so that it starts no new work. With abort ended too, the batch in hand is
// cut short instead, and its message stays in the queue.
func TestAGracefulStopFinishesWhatIsInFlight(t *testing.T) {
	for _, abortToo := range []bool{false, true} {
		t.Run(map[bool]string{false: "stop", true: "stop then abort"}[abortToo], func(t *testing.T) {
			q, src, _ := newQueue(t, 5)
			send(t, q, src, "1", "2", "3", "4")
			started, release := make(chan struct{}), make(chan struct{})
			var calls atomic.Int64
			var handlerErr atomic.Value
			var stoppingBefore, stoppingAfter atomic.Bool
			handler := func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
				stoppingBefore.Store(turn.Stopping(ctx))
				if calls.Add(1) == 1 {
					close(started)
				}
				select {
				case <-release:
				case <-ctx.Done():
				}
				stoppingAfter.Store(turn.Stopping(ctx))
				handlerErr.Store(fmt.Sprint(ctx.Err()))
				return events.SQSEventResponse{}, ctx.Err()
			}
			r := &Runner{Queues: q, Log: quiet(), Sources: []Source{{Name: "work", Queue: src, Handler: handler, Pollers: 1,
				BatchSize: 1, Visibility: 30 * time.Second}}}
			stop, endStop := context.WithCancel(context.Background())
			abort, endAbort := context.WithCancel(context.Background())
			defer endAbort()
			done := make(chan error, 1)
			go func() { done <- r.RunGraceful(stop, abort) }()
			<-started
			waitFor(t, "the next batch to be received ahead", func() bool {
				_, inFlight, err := q.Depth(context.Background(), src)
				return err == nil && inFlight == 2
			})
			endStop()
			waitFor(t, "the batch received ahead to be given back", func() bool { return r.Stats.GivenBack.Load() == 1 })
			if abortToo {
				endAbort()
			} else {
				close(release)
			}
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("RunGraceful = %v, want context.Canceled", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("RunGraceful did not return 10s after its batch in hand ended")
			}
			visible, inFlight, err := q.Depth(context.Background(), src)
			if err != nil {
				t.Fatal(err)
			}
			// Stopped: message 1 done and deleted, the 3 others visible. Aborted: message 1 failed
			// and waits out its visibility timeout, as a failed batch does on Lambda.
			wantInFlight, wantErr, wantCut := 0, "<nil>", int64(0)
			if abortToo {
				wantInFlight, wantErr, wantCut = 1, context.Canceled.Error(), 1
			}
			if calls.Load() != 1 || visible != 3 || inFlight != wantInFlight {
				t.Errorf("%d invocations, %d messages visible and %d in flight; want 1, 3 and %d", calls.Load(), visible, inFlight, wantInFlight)
			}
			if stoppingBefore.Load() || !stoppingAfter.Load() {
				t.Errorf("the handler saw turn.Stopping %v before the stop and %v after it, want false and true",
					stoppingBefore.Load(), stoppingAfter.Load())
			}
			if got := handlerErr.Load(); got != wantErr || r.Stats.CutShort.Load() != wantCut {
				t.Errorf("the handler's context ended with %v and %d batches were cut short, want %s and %d", got, r.Stats.CutShort.Load(), wantErr, wantCut)
			}
		})
	}
}
