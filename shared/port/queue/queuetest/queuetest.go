// Package queuetest is the conformance suite for the queue port. Every adapter (SQS against an
// emulator or LocalStack, and the embedded SQLite queue) runs the same Run from its own tests, so
// that semantics which differ between backends show up as test failures, in the style of upspin's
// storagetest.
//
// Each subtest creates its own uniquely named queues, so a Backend may be shared by subtests and
// by concurrent runs. The suite relies on one-second visibility timeouts and delays (SQS's
// granularity), polls with deadlines rather than sleeping, and takes well under 20 s per backend.
package queuetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// Backend is what the suite tests: every queue capability at once.
type Backend interface {
	queue.Sender
	queue.Receiver
	queue.Admin
}

// Capability names an optional feature a backend (usually an emulator) may lack.
type Capability string

// The optional capabilities.
const (
	// Redrive is Admin.Redrive (SQS's StartMessageMoveTask), which some emulators lack.
	Redrive Capability = "redrive"
)

// Lacker is implemented by a Backend that lacks some optional capability; Run skips the
// subtests that need a capability for which Lacks returns true. A Backend that does not
// implement Lacker is tested on everything.
type Lacker interface {
	Lacks(c Capability) bool
}

// Long enough that a message received in a subtest stays invisible for the rest of it.
const longVisibility = 30 * time.Second

// Run runs the conformance suite. newBackend is called once per subtest; it may return the same
// backend every time.
func Run(t *testing.T, newBackend func(t *testing.T) Backend) {
	tests := []struct {
		name string
		need Capability
		fn   func(t *testing.T, b Backend)
	}{
		{"SendReceiveDelete", "", testSendReceiveDelete},
		{"SendBatch25", "", testSendBatch25},
		{"DeleteBatch", "", testDeleteBatch},
		{"ReceiveCountIncrements", "", testReceiveCount},
		{"VisibilityTimeout", "", testVisibilityTimeout},
		{"ChangeVisibilityZero", "", testChangeVisibilityZero},
		{"Delay", "", testDelay},
		{"DeadLetter", "", testDeadLetter},
		{"Attributes", "", testAttributes},
		{"Redrive", Redrive, testRedrive},
		{"Depth", "", testDepth},
		{"LongPoll", "", testLongPoll},
		{"ConcurrentReceivers", "", testConcurrentReceivers},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBackend(t)
			if l, ok := b.(Lacker); ok && tt.need != "" && l.Lacks(tt.need) {
				t.Skipf("backend lacks %s", tt.need)
			}
			tt.fn(t, b)
		})
	}
}

// uniqueName returns a fresh queue name (at most 80 characters of [A-Za-z0-9_-]).
func uniqueName(t *testing.T, role string) string {
	t.Helper()
	var r [6]byte
	if _, err := rand.Read(r[:]); err != nil {
		t.Fatalf("random name: %v", err)
	}
	sub := t.Name()
	if i := strings.LastIndexByte(sub, '/'); i >= 0 {
		sub = sub[i+1:]
	}
	sub = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, sub)
	if len(sub) > 40 {
		sub = sub[:40]
	}
	return fmt.Sprintf("qt-%s-%s-%s", sub, role, hex.EncodeToString(r[:]))
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newQueue creates a queue with no DLQ.
func newQueue(t *testing.T, b Backend) string {
	t.Helper()
	q, err := b.CreateQueue(ctxFor(t), uniqueName(t, "q"), queue.Config{Visibility: longVisibility})
	if err != nil {
		t.Fatalf("CreateQueue: %v", err)
	}
	return q
}

// newQueueWithDLQ creates a source queue and its dead-letter queue.
func newQueueWithDLQ(t *testing.T, b Backend, maxReceive int) (src, dlq string) {
	t.Helper()
	ctx := ctxFor(t)
	dlq, err := b.CreateQueue(ctx, uniqueName(t, "dlq"), queue.Config{Visibility: longVisibility})
	if err != nil {
		t.Fatalf("CreateQueue dlq: %v", err)
	}
	src, err = b.CreateQueue(ctx, uniqueName(t, "src"), queue.Config{
		Visibility: longVisibility, DeadLetter: dlq, MaxReceiveCount: maxReceive,
	})
	if err != nil {
		t.Fatalf("CreateQueue source: %v", err)
	}
	return src, dlq
}

func send(t *testing.T, b Backend, q string, entries ...queue.Entry) {
	t.Helper()
	if err := b.SendBatch(ctxFor(t), q, entries); err != nil {
		t.Fatalf("SendBatch: %v", err)
	}
}

// receiveOne polls q until a message arrives or the deadline passes.
func receiveOne(t *testing.T, b Backend, q string, visibility, within time.Duration) queue.Message {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		msgs, err := b.Receive(ctxFor(t), q, 1, visibility, time.Second)
		if err != nil {
			t.Fatalf("Receive: %v", err)
		}
		if len(msgs) > 1 {
			t.Fatalf("Receive(max 1) returned %d messages", len(msgs))
		}
		if len(msgs) == 1 {
			return msgs[0]
		}
	}
	t.Fatalf("no message on %s within %v", q, within)
	return queue.Message{}
}

// receiveNone asserts that q returns nothing for a short long-poll of wait.
func receiveNone(t *testing.T, b Backend, q string, wait time.Duration) {
	t.Helper()
	msgs, err := b.Receive(ctxFor(t), q, 10, longVisibility, wait)
	if err != nil {
		t.Fatalf("Receive: %v", err)
	}
	if len(msgs) != 0 {
		t.Fatalf("Receive returned %d messages (first %q, count %d), want none", len(msgs), msgs[0].Body, msgs[0].ReceiveCount)
	}
}

// waitDepth polls Depth until it equals want or the deadline passes (SQS's counts are approximate
// and lag a little).
func waitDepth(t *testing.T, b Backend, q string, wantVisible, wantNotVisible int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var v, nv int
	for {
		var err error
		v, nv, err = b.Depth(ctxFor(t), q)
		if err != nil {
			t.Fatalf("Depth: %v", err)
		}
		if v == wantVisible && nv == wantNotVisible {
			return
		}
		if time.Now().After(deadline) {
			break
		}
		pollPause()
	}
	t.Fatalf("Depth(%s) = %d visible, %d not visible; want %d, %d", q, v, nv, wantVisible, wantNotVisible)
}

// pollPause yields between polls of a state that has no wake-up signal (Depth).
func pollPause() {
	timer := time.NewTimer(50 * time.Millisecond)
	<-timer.C
}

func changeVisibility(t *testing.T, b Backend, q, handle string, d time.Duration) {
	t.Helper()
	if err := b.ChangeVisibility(ctxFor(t), q, handle, d); err != nil {
		t.Fatalf("ChangeVisibility(%v): %v", d, err)
	}
}

func del(t *testing.T, b Backend, q, handle string) {
	t.Helper()
	if err := b.Delete(ctxFor(t), q, handle); err != nil {
		t.Fatalf("Delete: %v", err)
	}
}

func testSendReceiveDelete(t *testing.T, b Backend) {
	q := newQueue(t, b)
	before := time.Now().Add(-time.Minute)
	send(t, b, q, queue.Entry{ID: "a", Body: `{"url":"https://example.com/ä"}`})
	m := receiveOne(t, b, q, longVisibility, 5*time.Second)
	if m.Body != `{"url":"https://example.com/ä"}` {
		t.Errorf("Body = %q", m.Body)
	}
	if m.ReceiveCount != 1 {
		t.Errorf("ReceiveCount = %d, want 1", m.ReceiveCount)
	}
	if m.ID == "" || m.ReceiptHandle == "" {
		t.Errorf("ID = %q, ReceiptHandle = %q, want both set", m.ID, m.ReceiptHandle)
	}
	if m.SentAt.Before(before) || m.SentAt.After(time.Now().Add(time.Minute)) {
		t.Errorf("SentAt = %v, want about now", m.SentAt)
	}
	del(t, b, q, m.ReceiptHandle)
	waitDepth(t, b, q, 0, 0)
	receiveNone(t, b, q, 0)
}

func testReceiveCount(t *testing.T, b Backend) {
	q := newQueue(t, b)
	send(t, b, q, queue.Entry{ID: "a", Body: "again"})
	for want := 1; want <= 3; want++ {
		m := receiveOne(t, b, q, longVisibility, 5*time.Second)
		if m.ReceiveCount != want {
			t.Fatalf("receive %d: ReceiveCount = %d", want, m.ReceiveCount)
		}
		if m.Body != "again" {
			t.Fatalf("receive %d: Body = %q", want, m.Body)
		}
		changeVisibility(t, b, q, m.ReceiptHandle, 0)
	}
}

func testVisibilityTimeout(t *testing.T, b Backend) {
	q := newQueue(t, b)
	send(t, b, q, queue.Entry{ID: "a", Body: "hide"})
	m := receiveOne(t, b, q, time.Second, 5*time.Second)
	receiveNone(t, b, q, 0)
	again := receiveOne(t, b, q, longVisibility, 8*time.Second)
	if again.Body != "hide" || again.ReceiveCount != 2 {
		t.Errorf("after the timeout got %q count %d, want %q count 2", again.Body, again.ReceiveCount, "hide")
	}
	if again.ID != m.ID {
		t.Errorf("message ID changed from %q to %q", m.ID, again.ID)
	}
}

func testChangeVisibilityZero(t *testing.T, b Backend) {
	src, dlq := newQueueWithDLQ(t, b, 2)
	send(t, b, src, queue.Entry{ID: "a", Body: "stay"})
	for want := 1; want <= 2; want++ {
		m := receiveOne(t, b, src, longVisibility, 5*time.Second)
		if m.ReceiveCount != want {
			t.Fatalf("receive %d: ReceiveCount = %d", want, m.ReceiveCount)
		}
		changeVisibility(t, b, src, m.ReceiptHandle, 0)
	}
	// Two receives (the maximum) and two ChangeVisibility(0): the message must still be in the
	// source queue, visible, and not in the DLQ.
	waitDepth(t, b, src, 1, 0)
	receiveNone(t, b, dlq, time.Second)
}

func testDelay(t *testing.T, b Backend) {
	q := newQueue(t, b)
	send(t, b, q, queue.Entry{ID: "a", Body: "later", Delay: time.Second})
	receiveNone(t, b, q, 0)
	m := receiveOne(t, b, q, longVisibility, 8*time.Second)
	if m.Body != "later" || m.ReceiveCount != 1 {
		t.Errorf("got %q count %d, want %q count 1", m.Body, m.ReceiveCount, "later")
	}
}

// moveToDLQ receives the message on src maxReceive times, releasing it each time, then receives
// once more, which must move it to the DLQ instead of returning it.
func moveToDLQ(t *testing.T, b Backend, src string, maxReceive int) {
	t.Helper()
	for want := 1; want <= maxReceive; want++ {
		m := receiveOne(t, b, src, longVisibility, 5*time.Second)
		if m.ReceiveCount != want {
			t.Fatalf("receive %d: ReceiveCount = %d", want, m.ReceiveCount)
		}
		changeVisibility(t, b, src, m.ReceiptHandle, 0)
	}
	receiveNone(t, b, src, time.Second)
}

func testDeadLetter(t *testing.T, b Backend) {
	src, dlq := newQueueWithDLQ(t, b, 2)
	body := `{"url":"https://example.com/poison","n":1}`
	send(t, b, src, queue.Entry{ID: "a", Body: body})
	moveToDLQ(t, b, src, 2)
	m := receiveOne(t, b, dlq, longVisibility, 5*time.Second)
	if m.Body != body {
		t.Errorf("DLQ body = %q, want %q", m.Body, body)
	}
	del(t, b, dlq, m.ReceiptHandle)
	waitDepth(t, b, src, 0, 0)
}

// testAttributes: string message attributes (the trace context) arrive with the message, and stay
// with it through a move to the dead-letter queue; a message sent with none has none.
func testAttributes(t *testing.T, b Backend) {
	attrs := map[string]string{
		"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"tracestate":  "congo=t61rcWkgMzE",
	}
	q := newQueue(t, b)
	send(t, b, q, queue.Entry{ID: "a", Body: "with", Attributes: attrs}, queue.Entry{ID: "b", Body: "without"})
	for range 2 {
		m := receiveOne(t, b, q, longVisibility, 5*time.Second)
		switch {
		case m.Body == "with" && !maps.Equal(m.Attributes, attrs):
			t.Errorf("attributes = %v, want %v", m.Attributes, attrs)
		case m.Body == "without" && len(m.Attributes) != 0:
			t.Errorf("attributes of a message sent with none = %v, want none", m.Attributes)
		}
		del(t, b, q, m.ReceiptHandle)
	}

	src, dlq := newQueueWithDLQ(t, b, 1)
	send(t, b, src, queue.Entry{ID: "a", Body: "with", Attributes: attrs})
	moveToDLQ(t, b, src, 1)
	d := receiveOne(t, b, dlq, longVisibility, 5*time.Second)
	if !maps.Equal(d.Attributes, attrs) {
		t.Errorf("attributes in the DLQ = %v, want %v", d.Attributes, attrs)
	}
	del(t, b, dlq, d.ReceiptHandle)
}

func testRedrive(t *testing.T, b Backend) {
	src, dlq := newQueueWithDLQ(t, b, 1)
	send(t, b, src, queue.Entry{ID: "a", Body: "back"})
	moveToDLQ(t, b, src, 1)
	waitDepth(t, b, dlq, 1, 0)
	n, err := b.Redrive(ctxFor(t), dlq, src)
	if err != nil {
		t.Fatalf("Redrive: %v", err)
	}
	if n != 1 && n != -1 {
		t.Errorf("Redrive moved %d, want 1 (or -1 for unknown)", n)
	}
	m := receiveOne(t, b, src, longVisibility, 10*time.Second)
	if m.Body != "back" {
		t.Errorf("redriven body = %q, want %q", m.Body, "back")
	}
	del(t, b, src, m.ReceiptHandle)
	waitDepth(t, b, dlq, 0, 0)
}

func testDepth(t *testing.T, b Backend) {
	q := newQueue(t, b)
	waitDepth(t, b, q, 0, 0)
	send(t, b, q,
		queue.Entry{ID: "a", Body: "1"}, queue.Entry{ID: "b", Body: "2"}, queue.Entry{ID: "c", Body: "3"})
	waitDepth(t, b, q, 3, 0)
	m := receiveOne(t, b, q, longVisibility, 5*time.Second)
	waitDepth(t, b, q, 2, 1)
	send(t, b, q, queue.Entry{ID: "d", Body: "4", Delay: 10 * time.Second})
	waitDepth(t, b, q, 2, 2)
	del(t, b, q, m.ReceiptHandle)
	waitDepth(t, b, q, 2, 1)
}

func testLongPoll(t *testing.T, b Backend) {
	q := newQueue(t, b)
	sent := make(chan error, 1)
	go func() {
		sent <- b.SendBatch(context.Background(), q, []queue.Entry{{ID: "a", Body: "woken"}})
	}()
	// One long poll, generous wait: it must return the message, whenever it arrives.
	msgs, err := b.Receive(ctxFor(t), q, 10, longVisibility, 10*time.Second)
	if err != nil {
		t.Fatalf("Receive: %v", err)
	}
	if err := <-sent; err != nil {
		t.Fatalf("SendBatch: %v", err)
	}
	if len(msgs) != 1 || msgs[0].Body != "woken" {
		t.Fatalf("long poll returned %+v, want the one message %q", msgs, "woken")
	}
}

func testConcurrentReceivers(t *testing.T, b Backend) {
	const workers, perWorker = 4, 100
	q := newQueue(t, b)
	var entries []queue.Entry
	for i := range workers * perWorker {
		entries = append(entries, queue.Entry{ID: fmt.Sprintf("e%d", i), Body: fmt.Sprintf("m%03d", i)})
	}
	send(t, b, q, entries...)

	var mu sync.Mutex
	got := map[string]int{}
	total := 0
	deadline := time.Now().Add(15 * time.Second)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				mu.Lock()
				done := total >= len(entries)
				mu.Unlock()
				if done {
					return
				}
				msgs, err := b.Receive(context.Background(), q, 10, longVisibility, 500*time.Millisecond)
				if err != nil {
					errs <- fmt.Errorf("receive: %w", err)
					return
				}
				for _, m := range msgs {
					mu.Lock()
					got[m.Body]++
					total++
					mu.Unlock()
					if err := b.Delete(context.Background(), q, m.ReceiptHandle); err != nil {
						errs <- fmt.Errorf("delete: %w", err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, e := range entries {
		if got[e.Body] != 1 {
			t.Errorf("%s received %d times, want exactly 1", e.Body, got[e.Body])
		}
	}
	if total != len(entries) {
		t.Errorf("received %d messages in all, want %d", total, len(entries))
	}
}
