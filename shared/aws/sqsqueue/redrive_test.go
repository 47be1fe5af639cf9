package sqsqueue

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

// moveAPI fakes the calls of a redrive through StartMessageMoveTask.
type moveAPI struct {
	fakeAPI
	startErr error
	lists    [][]types.ListMessageMoveTasksResultEntry // answers to ListMessageMoveTasks, in order
	listed   int
	started  *sqs.StartMessageMoveTaskInput
}

func (m *moveAPI) GetQueueAttributes(_ context.Context, in *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{"QueueArn": "arn:" + aws.ToString(in.QueueUrl)}}, nil
}

func (m *moveAPI) StartMessageMoveTask(_ context.Context, in *sqs.StartMessageMoveTaskInput, _ ...func(*sqs.Options)) (*sqs.StartMessageMoveTaskOutput, error) {
	m.started = in
	if m.startErr != nil {
		return nil, m.startErr
	}
	return &sqs.StartMessageMoveTaskOutput{TaskHandle: aws.String("h2")}, nil
}

func (m *moveAPI) ListMessageMoveTasks(context.Context, *sqs.ListMessageMoveTasksInput, ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error) {
	r := m.lists[min(m.listed, len(m.lists)-1)]
	m.listed++
	return &sqs.ListMessageMoveTasksOutput{Results: r}, nil
}

func TestRedriveWaitsForTheNewTask(t *testing.T) {
	old := types.ListMessageMoveTasksResultEntry{Status: aws.String("COMPLETED"), StartedTimestamp: 100, ApproximateNumberOfMessagesMoved: 9}
	m := &moveAPI{lists: [][]types.ListMessageMoveTasksResultEntry{
		{old}, // before the start
		{old}, // the new task is not listed yet: the old one must not count
		{{Status: aws.String("RUNNING"), TaskHandle: aws.String("h2"), StartedTimestamp: 200}, old},
		{{Status: aws.String("COMPLETED"), StartedTimestamp: 200, ApproximateNumberOfMessagesMoved: 3}, old},
	}}
	q := New(m)
	q.moveTaskPoll = time.Millisecond
	n, err := q.Redrive(context.Background(), "dlq", "src")
	if err != nil {
		t.Fatalf("Redrive: %v", err)
	}
	if n != 3 {
		t.Errorf("Redrive moved %d, want 3", n)
	}
	if aws.ToString(m.started.SourceArn) != "arn:dlq" || aws.ToString(m.started.DestinationArn) != "arn:src" {
		t.Errorf("StartMessageMoveTask(%s -> %s), want arn:dlq -> arn:src",
			aws.ToString(m.started.SourceArn), aws.ToString(m.started.DestinationArn))
	}
	if m.listed != 4 {
		t.Errorf("ListMessageMoveTasks called %d times, want 4", m.listed)
	}
}

func TestRedriveTaskFailed(t *testing.T) {
	m := &moveAPI{lists: [][]types.ListMessageMoveTasksResultEntry{
		nil,
		{{Status: aws.String("FAILED"), FailureReason: aws.String("AccessDenied"), StartedTimestamp: 5}},
	}}
	q := New(m)
	q.moveTaskPoll = time.Millisecond
	if _, err := q.Redrive(context.Background(), "dlq", "src"); err == nil {
		t.Error("Redrive of a failed task succeeded, want an error")
	}
}

func TestRedriveFallbackOnlyWhenUnsupported(t *testing.T) {
	m := &moveAPI{
		lists:    [][]types.ListMessageMoveTasksResultEntry{nil},
		startErr: &smithy.GenericAPIError{Code: "InvalidAction", Message: "Unknown action: StartMessageMoveTask"},
	}
	var received int
	m.receive = func(*sqs.ReceiveMessageInput) (*sqs.ReceiveMessageOutput, error) {
		received++
		return &sqs.ReceiveMessageOutput{}, nil // an empty DLQ ends the fallback at once
	}
	q := New(m)
	n, err := q.Redrive(context.Background(), "dlq", "src")
	if err != nil || n != 0 || received != 1 {
		t.Errorf("fallback Redrive = %d, %v after %d receives; want 0, nil after 1", n, err, received)
	}

	m.startErr = &smithy.GenericAPIError{Code: "AccessDenied"}
	received = 0
	if _, err := q.Redrive(context.Background(), "dlq", "src"); err == nil || received != 0 {
		t.Errorf("Redrive on AccessDenied = %v after %d receives; want the error and no fallback", err, received)
	}
}
