package queuetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// The batch calls: SendBatch past SQS's 10 entries per call, and DeleteBatch.

func testSendBatch25(t *testing.T, b Backend) {
	q := newQueue(t, b)
	var entries []queue.Entry
	want := map[string]bool{}
	for i := range 25 {
		body := fmt.Sprintf("body-%02d", i)
		entries = append(entries, queue.Entry{ID: fmt.Sprintf("e%d", i), Body: body})
		want[body] = true
	}
	send(t, b, q, entries...)
	got := map[string]int{}
	deadline := time.Now().Add(10 * time.Second)
	for len(got) < len(want) && time.Now().Before(deadline) {
		msgs, err := b.Receive(ctxFor(t), q, 10, longVisibility, time.Second)
		if err != nil {
			t.Fatalf("Receive: %v", err)
		}
		for _, m := range msgs {
			got[m.Body]++
			del(t, b, q, m.ReceiptHandle)
		}
	}
	for body := range want {
		if got[body] != 1 {
			t.Errorf("%s received %d times, want 1", body, got[body])
		}
	}
	if len(got) != len(want) {
		t.Errorf("received %d distinct bodies, want %d", len(got), len(want))
	}
}

// testDeleteBatch deletes more messages than one SQS call takes, and only those it names.
func testDeleteBatch(t *testing.T, b Backend) {
	q := newQueue(t, b)
	var entries []queue.Entry
	for i := range 13 {
		entries = append(entries, queue.Entry{ID: fmt.Sprintf("e%d", i), Body: fmt.Sprintf("body-%02d", i)})
	}
	send(t, b, q, entries...)
	var handles []string
	var kept queue.Message
	deadline := time.Now().Add(10 * time.Second)
	for (len(handles) < 12 || kept.ReceiptHandle == "") && time.Now().Before(deadline) {
		msgs, err := b.Receive(ctxFor(t), q, 10, longVisibility, time.Second)
		if err != nil {
			t.Fatalf("Receive: %v", err)
		}
		for _, m := range msgs {
			if m.Body == "body-07" {
				kept = m
				continue
			}
			handles = append(handles, m.ReceiptHandle)
		}
	}
	if len(handles) != 12 || kept.ReceiptHandle == "" {
		t.Fatalf("received %d messages and kept %q, want 12 and body-07", len(handles), kept.Body)
	}
	if err := b.DeleteBatch(ctxFor(t), q, handles); err != nil {
		t.Fatalf("DeleteBatch: %v", err)
	}
	waitDepth(t, b, q, 0, 1)
	// The one left out comes back; the deleted ones do not.
	changeVisibility(t, b, q, kept.ReceiptHandle, 0)
	if m := receiveOne(t, b, q, longVisibility, 5*time.Second); m.Body != "body-07" {
		t.Errorf("received %q, want body-07", m.Body)
	}
	receiveNone(t, b, q, 0)
}
