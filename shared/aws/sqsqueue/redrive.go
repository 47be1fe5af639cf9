package sqsqueue

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// Redrive moves every message of the dead-letter queue dlq back to source with SQS's
// StartMessageMoveTask, waits for the task to finish and returns how many messages it moved.
//
// Where the endpoint does not implement StartMessageMoveTask (some local emulators), Redrive
// falls back to moving the messages itself: receive from dlq, send to source, delete from dlq.
// The fallback keeps only message bodies, and a crash half-way may deliver a message twice
// (never lose one). It is used only when the action is unsupported, never on AWS.
func (q *Queue) Redrive(ctx context.Context, dlq, source string) (int, error) {
	dlqARN, err := q.queueARN(ctx, dlq)
	if err != nil {
		return 0, fmt.Errorf("redrive %s: %w", dlq, err)
	}
	srcARN, err := q.queueARN(ctx, source)
	if err != nil {
		return 0, fmt.Errorf("redrive %s: %w", dlq, err)
	}
	// The latest earlier task, so that waitMoveTask never takes it for the one started here.
	before, err := q.api.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{
		SourceArn: aws.String(dlqARN), MaxResults: aws.Int32(1),
	})
	if unsupported(err) {
		return q.redriveByHand(ctx, dlq, source)
	}
	if err != nil {
		return 0, fmt.Errorf("redrive %s: list message move tasks: %w", dlq, mapErr(err))
	}
	var after int64
	if len(before.Results) > 0 {
		after = before.Results[0].StartedTimestamp
	}
	out, err := q.api.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{
		SourceArn: aws.String(dlqARN), DestinationArn: aws.String(srcARN),
	})
	if unsupported(err) {
		return q.redriveByHand(ctx, dlq, source)
	}
	if err != nil {
		return 0, fmt.Errorf("redrive %s: start message move task: %w", dlq, mapErr(err))
	}
	n, err := q.waitMoveTask(ctx, dlqARN, aws.ToString(out.TaskHandle), after)
	if err != nil {
		return 0, fmt.Errorf("redrive %s: %w", dlq, err)
	}
	return n, nil
}

// waitMoveTask polls ListMessageMoveTasks until the task started on dlqARN ends. AWS fills in
// TaskHandle only while a task runs, so a finished task is the most recent one listed that
// started after the earlier task's start (after, in ms since the epoch; 0 when there was none).
func (q *Queue) waitMoveTask(ctx context.Context, dlqARN, handle string, after int64) (int, error) {
	ticker := time.NewTicker(q.moveTaskPoll)
	defer ticker.Stop()
	for {
		out, err := q.api.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{
			SourceArn: aws.String(dlqARN), MaxResults: aws.Int32(10),
		})
		if err != nil {
			return 0, fmt.Errorf("list message move tasks: %w", err)
		}
		running := false
		for _, t := range out.Results {
			if aws.ToString(t.TaskHandle) == handle && handle != "" {
				running = true
			}
		}
		if !running && len(out.Results) > 0 && (after == 0 || out.Results[0].StartedTimestamp > after) {
			t := out.Results[0]
			switch aws.ToString(t.Status) {
			case "COMPLETED":
				return int(t.ApproximateNumberOfMessagesMoved), nil
			case "FAILED":
				return 0, fmt.Errorf("message move task failed: %s", aws.ToString(t.FailureReason))
			case "CANCELLED":
				return 0, errors.New("message move task was cancelled")
			}
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("wait for message move task: %w", ctx.Err())
		case <-ticker.C:
		}
	}
}

// redriveByHand is the fallback for endpoints without StartMessageMoveTask. It stops at the first
// empty long poll of the dead-letter queue.
func (q *Queue) redriveByHand(ctx context.Context, dlq, source string) (int, error) {
	const hold = 60 * time.Second // longer than one receive-send-delete round
	moved := 0
	for {
		msgs, err := q.Receive(ctx, dlq, queue.MaxBatch, hold, time.Second)
		if err != nil {
			return moved, fmt.Errorf("redrive %s (fallback): %w", dlq, err)
		}
		if len(msgs) == 0 {
			return moved, nil
		}
		entries := make([]queue.Entry, len(msgs))
		for i, m := range msgs {
			entries[i] = queue.Entry{ID: fmt.Sprintf("m%d", i), Body: m.Body, Attributes: m.Attributes}
		}
		if err := q.SendBatch(ctx, source, entries); err != nil {
			// The unsent messages reappear in the DLQ after hold; the sent ones may be sent twice.
			return moved, fmt.Errorf("redrive %s (fallback): %w", dlq, err)
		}
		for _, m := range msgs {
			if err := q.Delete(ctx, dlq, m.ReceiptHandle); err != nil {
				return moved, fmt.Errorf("redrive %s (fallback): %w", dlq, err)
			}
			moved++
		}
	}
}

// unsupported reports whether err says the endpoint does not implement the action.
func unsupported(err error) bool {
	if err == nil {
		return false
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "InvalidAction", "UnsupportedOperation", "UnknownOperationException", "NotImplemented":
			return true // fauxqs 1.9.2 answers InvalidAction: "Unknown action: StartMessageMoveTask"
		}
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode() == http.StatusNotImplemented
	}
	return false
}
