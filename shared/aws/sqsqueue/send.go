package sqsqueue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/cenkalti/backoff/v4"

	"github.com/crawlstack/crawlstack/shared/port/queue"
)

type backoffPolicy = backoff.BackOff

// defaultBackoff spaces the re-sends of failed batch entries: exponential with jitter, from
// 100 ms up to 2 s between attempts.
func defaultBackoff() backoffPolicy {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = 100 * time.Millisecond
	b.MaxInterval = 2 * time.Second
	b.MaxElapsedTime = 0 // bounded by the retry count instead
	return b
}

// errSomeFailed tells the backoff loop that some entries of a batch are worth sending again.
var errSomeFailed = errors.New("some batch entries failed")

// SendBatch sends entries in chunks of at most queue.MaxBatch entries and queue.MaxBatchBytes of
// payload (queue.Chunks). Entries that SQS reports as failed through
// no fault of the sender (SenderFault false, such as an internal error or throttling) are re-sent,
// alone, a bounded number of times with exponential backoff; the rest fail at once. A call that
// fails as a whole has already been retried by the SDK's retryer. Delay is rounded up to whole
// seconds and capped at 15 minutes.
func (q *Queue) SendBatch(ctx context.Context, queueURL string, entries []queue.Entry) error {
	failed := map[string]error{}
	for _, chunk := range queue.Chunks(entries) {
		q.sendChunk(ctx, queueURL, chunk, failed)
	}
	if len(failed) > 0 {
		return fmt.Errorf("send to %s: %w", queueURL, &queue.BatchError{Failed: failed})
	}
	return nil
}

// sendChunk sends at most queue.MaxBatch entries and records in failed the ones it could not send.
func (q *Queue) sendChunk(ctx context.Context, queueURL string, chunk []queue.Entry, failed map[string]error) {
	pending := chunk
	permanent := map[string]error{} // sender faults: sending again cannot help
	var transient map[string]error  // the latest attempt's retryable failures
	attempt := func() error {
		out, err := q.api.SendMessageBatch(ctx, batchInput(queueURL, pending))
		if err != nil {
			transient = map[string]error{}
			for _, e := range pending {
				transient[e.ID] = mapErr(err)
			}
			return backoff.Permanent(err)
		}
		byID := make(map[string]queue.Entry, len(pending))
		for _, e := range pending {
			byID[e.ID] = e
		}
		transient = map[string]error{}
		var again []queue.Entry
		for _, f := range out.Failed {
			id := aws.ToString(f.Id)
			cause := fmt.Errorf("%s: %s", aws.ToString(f.Code), aws.ToString(f.Message))
			if f.SenderFault {
				permanent[id] = cause
				continue
			}
			transient[id] = cause
			if e, ok := byID[id]; ok {
				again = append(again, e)
			}
		}
		pending = again
		if len(again) > 0 {
			return errSomeFailed
		}
		return nil
	}
	policy := backoff.WithContext(backoff.WithMaxRetries(q.backoff(), q.sendRetries), ctx)
	if err := backoff.Retry(attempt, policy); err != nil && ctx.Err() != nil {
		for _, e := range pending {
			if _, ok := transient[e.ID]; !ok {
				transient[e.ID] = ctx.Err()
			}
		}
	}
	for id, err := range permanent {
		failed[id] = err
	}
	for id, err := range transient {
		failed[id] = err
	}
}

func batchInput(queueURL string, entries []queue.Entry) *sqs.SendMessageBatchInput {
	in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(queueURL)}
	for _, e := range entries {
		in.Entries = append(in.Entries, types.SendMessageBatchRequestEntry{
			Id:                aws.String(e.ID),
			MessageBody:       aws.String(e.Body),
			DelaySeconds:      int32(min(seconds(e.Delay), int64(queue.MaxDelay/time.Second))),
			MessageAttributes: stringAttributes(e.Attributes),
		})
	}
	return in
}

// stringAttributes turns string attributes into SQS message attributes (nil for none).
func stringAttributes(attrs map[string]string) map[string]types.MessageAttributeValue {
	if len(attrs) == 0 {
		return nil
	}
	out := make(map[string]types.MessageAttributeValue, len(attrs))
	for k, v := range attrs {
		out[k] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	return out
}
