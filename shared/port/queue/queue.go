// Package queue is the port for the crawler's message queues. Its semantics are those of an SQS
// standard queue: at-least-once delivery, a visibility timeout, per-message delays, a receive count,
// and a dead-letter queue after MaxReceiveCount receives. Both adapter families (SQS, and the
// embedded SQLite queue) implement it and pass the conformance suite in queuetest.
//
// A queue is named by an opaque address: an SQS queue URL on AWS, a plain name in the embedded
// store. Handlers never build addresses; they get them from configuration.
//
// All methods are safe for concurrent use.
package queue

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"
)

// MaxBatch is the largest number of entries SQS accepts in one SendMessageBatch call. Senders
// split longer slices into chunks of MaxBatch themselves.
const MaxBatch = 10

// MaxBatchBytes is the largest total payload SQS accepts in one SendMessageBatch call: the sum of
// its messages' sizes (EntrySize), 256 KiB, as for one message (SendMessageBatch's API reference:
// "the maximum total payload size (the sum of the individual lengths of all of the batched
// messages) [is] 256 KiB (262,144 bytes)"; a longer call fails whole, BatchRequestTooLong).
const MaxBatchBytes = 256 << 10

// MaxDelay is the longest per-message delay SQS supports. Longer waits are chained by the caller.
const MaxDelay = 15 * time.Minute

// ErrNotFound is returned when a queue address does not name an existing queue.
var ErrNotFound = errors.New("queue not found")

// Entry is one message to send.
type Entry struct {
	// ID identifies the entry within one SendBatch call (it must be unique in that call).
	ID string
	// Body is the message text (a JSON document in this project).
	Body string
	// Delay hides the message for this long after it is sent; 0 means no delay. At most MaxDelay.
	Delay time.Duration
	// Attributes are string message attributes that travel beside the body (SQS message
	// attributes), such as the W3C trace context; nil sends none. At most MaxAttributes.
	Attributes map[string]string
}

// MaxAttributes is the most message attributes SQS accepts on one message.
const MaxAttributes = 10

// Message is one received message.
type Message struct {
	// ID is the queue's own message id.
	ID string
	// ReceiptHandle identifies this receive; Delete and ChangeVisibility take it.
	ReceiptHandle string
	Body          string
	// ReceiveCount is how many times the message has been received, this receive included
	// (SQS's ApproximateReceiveCount).
	ReceiveCount int
	// SentAt is when the message was first sent.
	SentAt time.Time
	// Attributes are the string message attributes the message was sent with (nil: none).
	Attributes map[string]string
}

// Sender sends messages. SendBatch sends every entry, splitting into chunks of MaxBatch and
// retrying only the entries that failed; it returns an error only when some entry could not be
// sent, and that error wraps a *BatchError naming them.
type Sender interface {
	SendBatch(ctx context.Context, queue string, entries []Entry) error
}

// Receiver is what a poller (the local runner, or the tests) needs to consume a queue.
type Receiver interface {
	// Receive returns up to max messages, waiting up to wait for the first one. Each returned
	// message stays invisible for visibility. A message whose receive count would exceed the
	// queue's MaxReceiveCount is moved to the queue's DLQ instead of being returned.
	Receive(ctx context.Context, queue string, max int, visibility, wait time.Duration) ([]Message, error)
	// Delete removes a received message for good.
	Delete(ctx context.Context, queue, receiptHandle string) error
	// DeleteBatch removes received messages for good, as SQS's DeleteMessageBatch does (in chunks
	// of MaxBatch). It returns an error only when some message could not be deleted, and that error
	// wraps a *BatchError whose Failed keys are the receipt handles concerned.
	DeleteBatch(ctx context.Context, queue string, receiptHandles []string) error
	// ChangeVisibility makes a received message visible again after timeout (0: now).
	// It does not count as a receive.
	ChangeVisibility(ctx context.Context, queue, receiptHandle string, timeout time.Duration) error
}

// Config describes a queue to create.
type Config struct {
	// Visibility is the default visibility timeout.
	Visibility time.Duration
	// DeadLetter is the address of the dead-letter queue; empty means none.
	DeadLetter string
	// MaxReceiveCount is how many receives a message gets before it moves to DeadLetter.
	MaxReceiveCount int
}

// Admin creates and inspects queues. The local runner and the tests use it; the Lambda handlers
// never do (on AWS the CDK stack creates the queues).
type Admin interface {
	// CreateQueue creates the named queue if it does not exist and returns its address.
	CreateQueue(ctx context.Context, name string, cfg Config) (string, error)
	// Depth returns how many messages are visible, and how many are in flight or delayed.
	Depth(ctx context.Context, queue string) (visible, notVisible int, err error)
	// Redrive moves every message of the dead-letter queue dlq back to the source queue.
	// It returns how many messages it moved (where the backend can tell; -1 otherwise).
	Redrive(ctx context.Context, dlq, source string) (int, error)
}

// BatchError lists the entries of a SendBatch call that could not be sent.
type BatchError struct {
	Failed map[string]error // entry ID -> cause
}

func (e *BatchError) Error() string {
	ids := make([]string, 0, len(e.Failed))
	for id := range e.Failed {
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return "send batch: no failed entries"
	}
	sort.Strings(ids)
	return fmt.Sprintf("send batch: %d entries failed, first %s: %v", len(ids), ids[0], e.Failed[ids[0]])
}

// EntrySize is the size SQS counts for e against its message and batch limits: the body, and
// each attribute's name, data type ("String") and value.
func EntrySize(e Entry) int {
	n := len(e.Body)
	for k, v := range e.Attributes {
		n += len(k) + len("String") + len(v)
	}
	return n
}

// Chunks splits entries into slices of at most MaxBatch entries and at most MaxBatchBytes in all
// (EntrySize), in order. An entry larger than MaxBatchBytes alone goes in a chunk of its own, for
// SQS to refuse.
func Chunks(entries []Entry) [][]Entry {
	var out [][]Entry
	start, size := 0, 0
	for i, e := range entries {
		n := EntrySize(e)
		if i > start && (i-start == MaxBatch || size+n > MaxBatchBytes) {
			out = append(out, entries[start:i])
			start, size = i, 0
		}
		size += n
	}
	if start < len(entries) {
		out = append(out, entries[start:])
	}
	return out
}
