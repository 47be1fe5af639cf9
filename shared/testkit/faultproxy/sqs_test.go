package faultproxy_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/crawlstack/crawlstack/shared/testkit/faultproxy"
)

// depth is the emulator's count of the queue's messages, visible and in flight, read directly.
func (r *rig) depth(t *testing.T, q string) (visible, inFlight int) {
	t.Helper()
	out, err := r.direct.sqs.GetQueueAttributes(ctxT(t), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(q),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		t.Fatal(err)
	}
	v, _ := strconv.Atoi(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessages)])
	nv, _ := strconv.Atoi(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)])
	return v, nv
}

func (r *rig) sendDirect(t *testing.T, q string, bodies ...string) {
	t.Helper()
	for _, b := range bodies {
		if _, err := r.direct.sqs.SendMessage(ctxT(t), &sqs.SendMessageInput{QueueUrl: aws.String(q), MessageBody: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
}

func (r *rig) receive(t *testing.T, q string, max int32) []types.Message {
	t.Helper()
	out, err := r.via.sqs.ReceiveMessage(ctxT(t), &sqs.ReceiveMessageInput{QueueUrl: aws.String(q),
		MaxNumberOfMessages: max, VisibilityTimeout: 30, WaitTimeSeconds: 1})
	if err != nil {
		t.Fatalf("ReceiveMessage: %v", err)
	}
	return out.Messages
}

// TestIntegrationSQSDelayPastTheClientTimeoutSendsTwice: a SendMessage whose answer is held past
// the client's timeout was applied; the SDK sends it again, and the queue holds two messages.
func TestIntegrationSQSDelayPastTheClientTimeoutSendsTwice(t *testing.T) {
	r := newRig(t, faultproxy.Schedule{Seed: 3, Delay: 1500 * time.Millisecond,
		Script: map[uint64]faultproxy.Kind{1: faultproxy.Delay}}, 0, 400*time.Millisecond)
	q := r.newQueue(t)
	start := time.Now()
	if _, err := r.via.sqs.SendMessage(ctxT(t), &sqs.SendMessageInput{QueueUrl: aws.String(q), MessageBody: aws.String("once")}); err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	if took := time.Since(start); took < r.timeout || took >= 1500*time.Millisecond {
		t.Errorf("SendMessage took %v: want the client's timeout (%v) and a retry, not the whole delay", took, r.timeout)
	}
	if v, nv := r.depth(t, q); v+nv != 2 {
		t.Errorf("the queue holds %d messages after one send whose answer came late, want 2", v+nv)
	}
	if fs := r.p.Faults(); len(fs) != 1 || fs[0].Kind != faultproxy.Delay || fs[0].Op != "SendMessage" {
		t.Errorf("fault log = %v, want one delay on SendMessage", fs)
	}
}

// TestIntegrationSQSThrottle: a throttled SendMessage is not applied; the SDK decodes SQS's
// RequestThrottled and counts it as a throttle.
func TestIntegrationSQSThrottle(t *testing.T) {
	r := newRig(t, faultproxy.Schedule{Seed: 3, Script: map[uint64]faultproxy.Kind{1: faultproxy.Throttle}}, 1, 0)
	q := r.newQueue(t)
	_, err := r.via.sqs.SendMessage(ctxT(t), &sqs.SendMessageInput{QueueUrl: aws.String(q), MessageBody: aws.String("x")})
	if codeOf(err) != "RequestThrottled" || !retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err).Bool() {
		t.Fatalf("err = %v (code %q), want RequestThrottled, which the SDK counts as a throttle", err, codeOf(err))
	}
	if v, nv := r.depth(t, q); v+nv != 0 {
		t.Errorf("the queue holds %d messages after a throttled send, want 0", v+nv)
	}
}

// TestIntegrationSQSDuplicateInOneReceive: one message comes twice in one answer, with the same
// id and receipt handle, while the emulator holds it once.
func TestIntegrationSQSDuplicateInOneReceive(t *testing.T) {
	r := newRig(t, faultproxy.Schedule{Seed: 3, Script: map[uint64]faultproxy.Kind{1: faultproxy.DupInReceive}}, 0, 0)
	q := r.newQueue(t)
	r.sendDirect(t, q, "a", "b", "c")
	msgs := r.receive(t, q, 10)
	seen := map[string]int{}
	receipts := map[string]string{}
	for _, m := range msgs {
		id := aws.ToString(m.MessageId)
		if seen[id]++; seen[id] == 2 && receipts[id] != aws.ToString(m.ReceiptHandle) {
			t.Errorf("the copy of %s has another receipt handle", id)
		}
		receipts[id] = aws.ToString(m.ReceiptHandle)
	}
	twice := 0
	for _, n := range seen {
		if n == 2 {
			twice++
		}
	}
	if twice != 1 || len(msgs) != len(seen)+1 {
		t.Fatalf("answer of %d messages, %d distinct (%v): want exactly one message twice", len(msgs), len(seen), seen)
	}
	if v, nv := r.depth(t, q); v+nv != 3 || nv != len(seen) {
		t.Errorf("the emulator holds %d visible and %d in flight, want 3 messages of which the %d received in flight", v, nv, len(seen))
	}
	if c := r.p.Counts(); c[faultproxy.DupInReceive] != 1 {
		t.Errorf("counts = %v, want one dup-in-receive", c)
	}
}

// TestIntegrationSQSDuplicateInALaterReceive: a copy of a received message comes in a later
// answer while the original is in flight; once the original is deleted, no copy comes.
func TestIntegrationSQSDuplicateInALaterReceive(t *testing.T) {
	t.Run("while_in_flight", func(t *testing.T) {
		r := newRig(t, faultproxy.Schedule{Seed: 3, Script: map[uint64]faultproxy.Kind{1: faultproxy.DupLater}}, 0, 0)
		q := r.newQueue(t)
		r.sendDirect(t, q, "a")
		first := r.receive(t, q, 1) // request 1: a copy is kept
		if len(first) != 1 {
			t.Fatalf("first receive: %d messages, want 1", len(first))
		}
		second := r.receive(t, q, 1) // request 2: the emulator has nothing visible; the copy comes
		if len(second) != 1 || aws.ToString(second[0].MessageId) != aws.ToString(first[0].MessageId) ||
			aws.ToString(second[0].ReceiptHandle) != aws.ToString(first[0].ReceiptHandle) {
			t.Fatalf("second receive = %d messages, want the copy of %s", len(second), aws.ToString(first[0].MessageId))
		}
		if v, nv := r.depth(t, q); v != 0 || nv != 1 {
			t.Errorf("the emulator holds %d visible, %d in flight, want the one original in flight", v, nv)
		}
		if c := r.p.Counts(); c[faultproxy.DupLater] != 1 {
			t.Errorf("counts = %v, want one dup-later", c)
		}
	})
	t.Run("not_after_delete", func(t *testing.T) {
		r := newRig(t, faultproxy.Schedule{Seed: 3, Script: map[uint64]faultproxy.Kind{1: faultproxy.DupLater}}, 0, 0)
		q := r.newQueue(t)
		r.sendDirect(t, q, "a")
		first := r.receive(t, q, 1) // request 1: a copy is kept
		if len(first) != 1 {
			t.Fatalf("first receive: %d messages, want 1", len(first))
		}
		if _, err := r.via.sqs.DeleteMessage(ctxT(t), &sqs.DeleteMessageInput{QueueUrl: aws.String(q), ReceiptHandle: first[0].ReceiptHandle}); err != nil {
			t.Fatal(err)
		}
		if again := r.receive(t, q, 1); len(again) != 0 {
			t.Errorf("a receive after the original was deleted got %d messages, want none", len(again))
		}
		if c := r.p.Counts(); c[faultproxy.DupLater] != 0 {
			t.Errorf("counts = %v, want no dup-later injected", c)
		}
	})
}
