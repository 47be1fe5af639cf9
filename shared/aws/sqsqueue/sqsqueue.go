// Package sqsqueue is the queue port on Amazon SQS (standard queues). Queue addresses are queue
// URLs. The same code runs against AWS, LocalStack and the local emulators; only the endpoint
// differs.
package sqsqueue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// API is the part of the SQS client this package calls; *sqs.Client implements it.
type API interface {
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
	CreateQueue(ctx context.Context, in *sqs.CreateQueueInput, optFns ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error)
	GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	StartMessageMoveTask(ctx context.Context, in *sqs.StartMessageMoveTaskInput, optFns ...func(*sqs.Options)) (*sqs.StartMessageMoveTaskOutput, error)
	ListMessageMoveTasks(ctx context.Context, in *sqs.ListMessageMoveTasksInput, optFns ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error)
}

var (
	_ queue.Sender   = (*Queue)(nil)
	_ queue.Receiver = (*Queue)(nil)
	_ queue.Admin    = (*Queue)(nil)
	_ API            = (*sqs.Client)(nil)
)

// DefaultMaxReceiveCount is the redrive policy's maxReceiveCount when a Config names a
// dead-letter queue but leaves MaxReceiveCount zero (the design asks for at least 5).
const DefaultMaxReceiveCount = 5

// Queue implements the queue port on SQS. It is safe for concurrent use.
type Queue struct {
	api API
	// sendRetries is how many times SendBatch re-sends the entries that failed.
	sendRetries uint64
	// backoff makes the wait between those re-sends; tests shorten it.
	backoff func() backoffPolicy
	// moveTaskPoll is the pause between ListMessageMoveTasks calls while a redrive runs.
	moveTaskPoll time.Duration
}

// New returns a Queue that calls c (normally an *sqs.Client built once per container).
func New(c API) *Queue {
	return &Queue{api: c, sendRetries: 4, backoff: defaultBackoff, moveTaskPoll: 500 * time.Millisecond}
}

// Receive returns up to limit (1..10) messages, long-polling up to wait (whole seconds, rounded up,
// at most 20 s). Each message stays invisible for visibility, rounded up to whole seconds.
func (q *Queue) Receive(ctx context.Context, queueURL string, limit int, visibility, wait time.Duration) ([]queue.Message, error) {
	in := &sqs.ReceiveMessageInput{
		QueueUrl:            aws.String(queueURL),
		MaxNumberOfMessages: int32(min(max(limit, 1), 10)),
		WaitTimeSeconds:     int32(min(seconds(wait), 20)),
		VisibilityTimeout:   int32(min(seconds(visibility), 43200)),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{
			types.MessageSystemAttributeNameApproximateReceiveCount,
			types.MessageSystemAttributeNameSentTimestamp,
		},
		MessageAttributeNames: []string{"All"},
	}
	out, err := q.api.ReceiveMessage(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("receive from %s: %w", queueURL, mapErr(err))
	}
	msgs := make([]queue.Message, 0, len(out.Messages))
	for _, m := range out.Messages {
		msg, err := toMessage(m)
		if err != nil {
			return nil, fmt.Errorf("receive from %s: %w", queueURL, err)
		}
		msgs = append(msgs, msg)
	}
	// The SDK omits an int32 zero, so VisibilityTimeout 0 above meant "the queue's default".
	// A caller that asked for zero gets the messages released at once, as SQS would do.
	if seconds(visibility) == 0 {
		for _, m := range msgs {
			if err := q.ChangeVisibility(ctx, queueURL, m.ReceiptHandle, 0); err != nil {
				return nil, err
			}
		}
	}
	return msgs, nil
}

func toMessage(m types.Message) (queue.Message, error) {
	msg := queue.Message{
		ID:            aws.ToString(m.MessageId),
		ReceiptHandle: aws.ToString(m.ReceiptHandle),
		Body:          aws.ToString(m.Body),
	}
	for k, v := range m.MessageAttributes {
		if v.StringValue == nil {
			continue // a binary attribute: the port carries strings only
		}
		if msg.Attributes == nil {
			msg.Attributes = make(map[string]string, len(m.MessageAttributes))
		}
		msg.Attributes[k] = *v.StringValue
	}
	if s, ok := m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)]; ok {
		n, err := strconv.Atoi(s)
		if err != nil {
			return queue.Message{}, fmt.Errorf("message %s: ApproximateReceiveCount %q: %w", msg.ID, s, err)
		}
		msg.ReceiveCount = n
	}
	if s, ok := m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)]; ok {
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return queue.Message{}, fmt.Errorf("message %s: SentTimestamp %q: %w", msg.ID, s, err)
		}
		msg.SentAt = time.UnixMilli(ms)
	}
	return msg, nil
}

// Delete removes a received message.
func (q *Queue) Delete(ctx context.Context, queueURL, receiptHandle string) error {
	_, err := q.api.DeleteMessage(ctx, &sqs.DeleteMessageInput{
		QueueUrl: aws.String(queueURL), ReceiptHandle: aws.String(receiptHandle),
	})
	if err != nil {
		return fmt.Errorf("delete from %s: %w", queueURL, mapErr(err))
	}
	return nil
}

// DeleteBatch removes received messages with DeleteMessageBatch, MaxBatch at a time. The SDK
// retries a failed call; an entry that still fails is named in the returned *BatchError.
func (q *Queue) DeleteBatch(ctx context.Context, queueURL string, receiptHandles []string) error {
	failed := map[string]error{}
	for start := 0; start < len(receiptHandles); start += queue.MaxBatch {
		chunk := receiptHandles[start:min(start+queue.MaxBatch, len(receiptHandles))]
		in := &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(queueURL)}
		for i, h := range chunk {
			in.Entries = append(in.Entries, types.DeleteMessageBatchRequestEntry{
				Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(h)})
		}
		out, err := q.api.DeleteMessageBatch(ctx, in)
		if err != nil {
			for _, h := range chunk {
				failed[h] = mapErr(err)
			}
			continue
		}
		for _, f := range out.Failed {
			i, err := strconv.Atoi(aws.ToString(f.Id))
			if err != nil || i < 0 || i >= len(chunk) {
				return fmt.Errorf("delete from %s: the answer names an unknown entry %q", queueURL, aws.ToString(f.Id))
			}
			failed[chunk[i]] = fmt.Errorf("%s: %s", aws.ToString(f.Code), aws.ToString(f.Message))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("delete from %s: %w", queueURL, &queue.BatchError{Failed: failed})
	}
	return nil
}

// ChangeVisibility makes a received message visible again after timeout (rounded up to whole
// seconds, at most 12 h). SQS does not count it as a receive.
func (q *Queue) ChangeVisibility(ctx context.Context, queueURL, receiptHandle string, timeout time.Duration) error {
	_, err := q.api.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl:          aws.String(queueURL),
		ReceiptHandle:     aws.String(receiptHandle),
		VisibilityTimeout: int32(min(seconds(timeout), 43200)),
	})
	if err != nil {
		return fmt.Errorf("change visibility on %s: %w", queueURL, mapErr(err))
	}
	return nil
}

// CreateQueue creates the named standard queue, or returns the URL of the existing one. A
// DeadLetter queue URL becomes a RedrivePolicy with the DLQ's ARN.
func (q *Queue) CreateQueue(ctx context.Context, name string, cfg queue.Config) (string, error) {
	attrs := map[string]string{}
	if cfg.Visibility > 0 {
		attrs[string(types.QueueAttributeNameVisibilityTimeout)] = strconv.FormatInt(seconds(cfg.Visibility), 10)
	}
	if cfg.DeadLetter != "" {
		arn, err := q.queueARN(ctx, cfg.DeadLetter)
		if err != nil {
			return "", fmt.Errorf("create queue %s: dead-letter queue: %w", name, err)
		}
		maxReceive := cfg.MaxReceiveCount
		if maxReceive <= 0 {
			maxReceive = DefaultMaxReceiveCount
		}
		policy, err := json.Marshal(struct {
			DeadLetterTargetArn string `json:"deadLetterTargetArn"`
			MaxReceiveCount     int    `json:"maxReceiveCount"`
		}{arn, maxReceive})
		if err != nil {
			return "", fmt.Errorf("create queue %s: redrive policy: %w", name, err)
		}
		attrs[string(types.QueueAttributeNameRedrivePolicy)] = string(policy)
	}
	out, err := q.api.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err == nil {
		return aws.ToString(out.QueueUrl), nil
	}
	// The queue exists with other attributes: it exists, which is all CreateQueue promises.
	var exists *types.QueueNameExists
	if !errors.As(err, &exists) {
		return "", fmt.Errorf("create queue %s: %w", name, err)
	}
	got, err := q.api.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		return "", fmt.Errorf("create queue %s: get url of the existing queue: %w", name, mapErr(err))
	}
	return aws.ToString(got.QueueUrl), nil
}

// QueueURL returns the URL of the named queue, or an error wrapping queue.ErrNotFound.
func (q *Queue) QueueURL(ctx context.Context, name string) (string, error) {
	out, err := q.api.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		return "", fmt.Errorf("find queue %s: %w", name, mapErr(err))
	}
	return aws.ToString(out.QueueUrl), nil
}

// Depth returns the approximate number of visible messages, and of messages in flight or delayed.
func (q *Queue) Depth(ctx context.Context, queueURL string) (visible, notVisible int, err error) {
	attrs, err := q.attributes(ctx, queueURL,
		types.QueueAttributeNameApproximateNumberOfMessages,
		types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		types.QueueAttributeNameApproximateNumberOfMessagesDelayed)
	if err != nil {
		return 0, 0, fmt.Errorf("depth of %s: %w", queueURL, err)
	}
	var n [3]int
	for i, name := range []types.QueueAttributeName{
		types.QueueAttributeNameApproximateNumberOfMessages,
		types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		types.QueueAttributeNameApproximateNumberOfMessagesDelayed,
	} {
		s := attrs[string(name)]
		if s == "" {
			continue
		}
		if n[i], err = strconv.Atoi(s); err != nil {
			return 0, 0, fmt.Errorf("depth of %s: %s %q: %w", queueURL, name, s, err)
		}
	}
	return n[0], n[1] + n[2], nil
}

func (q *Queue) queueARN(ctx context.Context, queueURL string) (string, error) {
	attrs, err := q.attributes(ctx, queueURL, types.QueueAttributeNameQueueArn)
	if err != nil {
		return "", err
	}
	arn := attrs[string(types.QueueAttributeNameQueueArn)]
	if arn == "" {
		return "", fmt.Errorf("queue %s has no QueueArn attribute", queueURL)
	}
	return arn, nil
}

func (q *Queue) attributes(ctx context.Context, queueURL string, names ...types.QueueAttributeName) (map[string]string, error) {
	out, err := q.api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(queueURL), AttributeNames: names,
	})
	if err != nil {
		return nil, fmt.Errorf("get attributes of %s: %w", queueURL, mapErr(err))
	}
	return out.Attributes, nil
}

// seconds rounds d up to whole seconds; negative durations give 0.
func seconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// mapErr turns SQS's "no such queue" into queue.ErrNotFound, keeping the SDK error in the chain.
func mapErr(err error) error {
	var notFound *types.QueueDoesNotExist
	if errors.As(err, &notFound) {
		return fmt.Errorf("%w: %w", queue.ErrNotFound, err)
	}
	var ae smithy.APIError
	if errors.As(err, &ae) && ae.ErrorCode() == "AWS.SimpleQueueService.NonExistentQueue" {
		return fmt.Errorf("%w: %w", queue.ErrNotFound, err)
	}
	return err
}
