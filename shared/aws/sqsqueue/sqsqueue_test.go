package sqsqueue

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/cenkalti/backoff/v4"

	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// fakeAPI is an API whose methods are function fields; unset ones fail the call.
type fakeAPI struct {
	API // nil: any method not overridden below panics, which fails the test
	mu  sync.Mutex

	sendBatch  func(*sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error)
	receive    func(*sqs.ReceiveMessageInput) (*sqs.ReceiveMessageOutput, error)
	changeVis  func(*sqs.ChangeMessageVisibilityInput) (*sqs.ChangeMessageVisibilityOutput, error)
	delBatch   func(*sqs.DeleteMessageBatchInput) (*sqs.DeleteMessageBatchOutput, error)
	batchCalls []*sqs.SendMessageBatchInput
}

func (f *fakeAPI) DeleteMessageBatch(_ context.Context, in *sqs.DeleteMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	return f.delBatch(in)
}

func (f *fakeAPI) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	f.mu.Lock()
	f.batchCalls = append(f.batchCalls, in)
	f.mu.Unlock()
	return f.sendBatch(in)
}

func (f *fakeAPI) ReceiveMessage(_ context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	return f.receive(in)
}

func (f *fakeAPI) ChangeMessageVisibility(_ context.Context, in *sqs.ChangeMessageVisibilityInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	return f.changeVis(in)
}

func newTestQueue(f *fakeAPI) *Queue {
	q := New(f)
	q.backoff = func() backoffPolicy { return &backoff.ZeroBackOff{} }
	return q
}

func entries(n int) []queue.Entry {
	var es []queue.Entry
	for i := range n {
		es = append(es, queue.Entry{ID: fmt.Sprintf("e%d", i), Body: fmt.Sprintf("b%d", i)})
	}
	return es
}

func ids(in *sqs.SendMessageBatchInput) string {
	var s []string
	for _, e := range in.Entries {
		s = append(s, aws.ToString(e.Id))
	}
	return strings.Join(s, ",")
}

func TestSendBatchChunks(t *testing.T) {
	f := &fakeAPI{sendBatch: func(*sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error) {
		return &sqs.SendMessageBatchOutput{}, nil
	}}
	if err := newTestQueue(f).SendBatch(context.Background(), "q", entries(25)); err != nil {
		t.Fatalf("SendBatch: %v", err)
	}
	var sizes []int
	for _, c := range f.batchCalls {
		sizes = append(sizes, len(c.Entries))
	}
	if fmt.Sprint(sizes) != "[10 10 5]" {
		t.Errorf("batch sizes = %v, want [10 10 5]", sizes)
	}
}

// Entries of about 240 KiB go one to a call, whatever their count: two would pass SQS's 256 KiB
// limit on a batch's total payload (attributes count too), which fails the call whole. Every
// call holds at most 10 entries and 256 KiB, and every entry is sent once, in order.
func TestSendBatchKeepsUnderThePayloadLimit(t *testing.T) {
	f := &fakeAPI{sendBatch: func(*sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error) {
		return &sqs.SendMessageBatchOutput{}, nil
	}}
	var es []queue.Entry
	for i := range 3 {
		es = append(es, queue.Entry{ID: fmt.Sprintf("big%d", i), Body: strings.Repeat("x", 240<<10)})
	}
	small := entries(12)
	small[0].Attributes = map[string]string{"traceparent": strings.Repeat("t", 20<<10)}
	es = append(es, small...)
	es = append(es, queue.Entry{ID: "last", Body: strings.Repeat("y", 200<<10)})
	if err := newTestQueue(f).SendBatch(context.Background(), "q", es); err != nil {
		t.Fatalf("SendBatch: %v", err)
	}
	var sent []string
	for _, c := range f.batchCalls {
		total := 0
		for _, e := range c.Entries {
			total += len(aws.ToString(e.MessageBody))
			for k, v := range e.MessageAttributes {
				total += len(k) + len(aws.ToString(v.DataType)) + len(aws.ToString(v.StringValue))
			}
			sent = append(sent, aws.ToString(e.Id))
		}
		if len(c.Entries) > 10 || total > 262144 {
			t.Errorf("a call of %d entries and %d bytes; want at most 10 and 262,144", len(c.Entries), total)
		}
	}
	var want []string
	for _, e := range es {
		want = append(want, e.ID)
	}
	if fmt.Sprint(sent) != fmt.Sprint(want) {
		t.Errorf("sent %v, want %v", sent, want)
	}
	// big0, big1 and big2 alone; the small ones 10 to a call; the last two small ones with the 200 KiB one.
	if len(f.batchCalls) != 5 {
		t.Errorf("%d calls, want 5", len(f.batchCalls))
	}
}

func TestSendBatchRetriesOnlyFailedEntries(t *testing.T) {
	calls := 0
	f := &fakeAPI{sendBatch: func(in *sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error) {
		calls++
		out := &sqs.SendMessageBatchOutput{}
		if calls == 1 {
			out.Failed = []types.BatchResultErrorEntry{
				{Id: aws.String("e1"), Code: aws.String("InternalError"), SenderFault: false},
				{Id: aws.String("e3"), Code: aws.String("InternalError"), SenderFault: false},
			}
		}
		return out, nil
	}}
	if err := newTestQueue(f).SendBatch(context.Background(), "q", entries(5)); err != nil {
		t.Fatalf("SendBatch: %v", err)
	}
	if len(f.batchCalls) != 2 {
		t.Fatalf("%d SendMessageBatch calls, want 2", len(f.batchCalls))
	}
	if got := ids(f.batchCalls[1]); got != "e1,e3" {
		t.Errorf("second call sent %s, want e1,e3", got)
	}
}

func TestSendBatchFailures(t *testing.T) {
	tests := []struct {
		name        string
		senderFault bool
		wantCalls   int
	}{
		{"SenderFaultNotRetried", true, 1},
		{"TransientRetriedThenGivesUp", false, 5}, // 1 + sendRetries (4)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeAPI{sendBatch: func(in *sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error) {
				return &sqs.SendMessageBatchOutput{Failed: []types.BatchResultErrorEntry{
					{Id: aws.String("e0"), Code: aws.String("X"), Message: aws.String("no"), SenderFault: tt.senderFault},
				}}, nil
			}}
			err := newTestQueue(f).SendBatch(context.Background(), "q", entries(2))
			var be *queue.BatchError
			if !errors.As(err, &be) {
				t.Fatalf("err = %v, want a *queue.BatchError", err)
			}
			if len(be.Failed) != 1 || be.Failed["e0"] == nil {
				t.Errorf("Failed = %v, want only e0", be.Failed)
			}
			if len(f.batchCalls) != tt.wantCalls {
				t.Errorf("%d calls, want %d", len(f.batchCalls), tt.wantCalls)
			}
		})
	}
}

func TestSendBatchCallError(t *testing.T) {
	f := &fakeAPI{sendBatch: func(*sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error) {
		return nil, &types.QueueDoesNotExist{Message: aws.String("gone")}
	}}
	err := newTestQueue(f).SendBatch(context.Background(), "q", entries(12))
	var be *queue.BatchError
	if !errors.As(err, &be) || len(be.Failed) != 12 {
		t.Fatalf("err = %v, want a *queue.BatchError naming all 12 entries", err)
	}
	if !errors.Is(be.Failed["e11"], queue.ErrNotFound) {
		t.Errorf("cause = %v, want queue.ErrNotFound", be.Failed["e11"])
	}
	if len(f.batchCalls) != 2 {
		t.Errorf("%d calls, want 2 (one per chunk, the SDK retries calls itself)", len(f.batchCalls))
	}
}

func TestDelaySeconds(t *testing.T) {
	tests := []struct {
		delay time.Duration
		want  int32
	}{
		{0, 0}, {-time.Second, 0}, {time.Millisecond, 1}, {1500 * time.Millisecond, 2},
		{15 * time.Minute, 900}, {time.Hour, 900},
	}
	for _, tt := range tests {
		in := batchInput("q", []queue.Entry{{ID: "a", Body: "b", Delay: tt.delay}})
		if got := in.Entries[0].DelaySeconds; got != tt.want {
			t.Errorf("Delay %v: DelaySeconds = %d, want %d", tt.delay, got, tt.want)
		}
	}
}

func TestReceive(t *testing.T) {
	var got *sqs.ReceiveMessageInput
	var released []string
	f := &fakeAPI{
		receive: func(in *sqs.ReceiveMessageInput) (*sqs.ReceiveMessageOutput, error) {
			got = in
			return &sqs.ReceiveMessageOutput{Messages: []types.Message{{
				MessageId: aws.String("m1"), ReceiptHandle: aws.String("h1"), Body: aws.String("x"),
				Attributes: map[string]string{"ApproximateReceiveCount": "3", "SentTimestamp": "1700000000123"},
			}}}, nil
		},
		changeVis: func(in *sqs.ChangeMessageVisibilityInput) (*sqs.ChangeMessageVisibilityOutput, error) {
			released = append(released, fmt.Sprintf("%s:%d", aws.ToString(in.ReceiptHandle), in.VisibilityTimeout))
			return &sqs.ChangeMessageVisibilityOutput{}, nil
		},
	}
	q := newTestQueue(f)
	msgs, err := q.Receive(context.Background(), "q", 50, 1500*time.Millisecond, 30*time.Second)
	if err != nil {
		t.Fatalf("Receive: %v", err)
	}
	if got.MaxNumberOfMessages != 10 || got.VisibilityTimeout != 2 || got.WaitTimeSeconds != 20 {
		t.Errorf("input max %d visibility %d wait %d, want 10, 2, 20",
			got.MaxNumberOfMessages, got.VisibilityTimeout, got.WaitTimeSeconds)
	}
	want := queue.Message{ID: "m1", ReceiptHandle: "h1", Body: "x", ReceiveCount: 3, SentAt: time.UnixMilli(1700000000123)}
	if len(msgs) != 1 || !reflect.DeepEqual(msgs[0], want) {
		t.Errorf("messages = %+v, want [%+v]", msgs, want)
	}
	if len(released) != 0 {
		t.Errorf("released %v with a non-zero visibility", released)
	}
	// Visibility 0: the SDK would omit the field (the queue default), so the adapter releases
	// the messages itself.
	if _, err := q.Receive(context.Background(), "q", 1, 0, 0); err != nil {
		t.Fatalf("Receive: %v", err)
	}
	if fmt.Sprint(released) != "[h1:0]" {
		t.Errorf("released = %v, want [h1:0]", released)
	}
}

func TestUnsupported(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{&smithy.GenericAPIError{Code: "InvalidAction", Message: "Unknown action: StartMessageMoveTask"}, true},
		{&smithy.GenericAPIError{Code: "UnsupportedOperation"}, true},
		{&smithy.GenericAPIError{Code: "AccessDenied"}, false},
		{&types.ResourceNotFoundException{}, false},
	}
	for _, tt := range tests {
		if got := unsupported(tt.err); got != tt.want {
			t.Errorf("unsupported(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// DeleteBatch goes out in chunks of 10, and names the receipt handles that SQS refused, or that a
// failed call carried, in its *BatchError.
func TestDeleteBatchReportsFailedHandles(t *testing.T) {
	var calls [][]string
	f := &fakeAPI{delBatch: func(in *sqs.DeleteMessageBatchInput) (*sqs.DeleteMessageBatchOutput, error) {
		var hs []string
		for _, e := range in.Entries {
			hs = append(hs, aws.ToString(e.ReceiptHandle))
		}
		calls = append(calls, hs)
		switch len(calls) {
		case 1: // the 4th entry of the first chunk is refused
			return &sqs.DeleteMessageBatchOutput{Failed: []types.BatchResultErrorEntry{{Id: in.Entries[3].Id,
				Code: aws.String("ReceiptHandleIsInvalid"), Message: aws.String("bad handle"), SenderFault: true}}}, nil
		default: // the second chunk's call fails as a whole
			return nil, errors.New("connection reset")
		}
	}}
	var handles []string
	for i := range 12 {
		handles = append(handles, fmt.Sprintf("h%d", i))
	}
	err := newTestQueue(f).DeleteBatch(context.Background(), "q", handles)
	var be *queue.BatchError
	if !errors.As(err, &be) {
		t.Fatalf("DeleteBatch: err = %v, want a *queue.BatchError", err)
	}
	if len(calls) != 2 || len(calls[0]) != 10 || len(calls[1]) != 2 {
		t.Errorf("calls = %v, want 10 handles then 2", calls)
	}
	var failed []string
	for h := range be.Failed {
		failed = append(failed, h)
	}
	slices.Sort(failed)
	if fmt.Sprint(failed) != "[h10 h11 h3]" {
		t.Errorf("failed handles = %v, want [h10 h11 h3]", failed)
	}
	if !strings.Contains(be.Failed["h3"].Error(), "ReceiptHandleIsInvalid") {
		t.Errorf("h3: %v, want the code SQS gave", be.Failed["h3"])
	}
}
