package sqsqueue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/crawlstack/crawlstack/shared/aws/sqsqueue"
	"github.com/crawlstack/crawlstack/shared/port/queue"
	"github.com/crawlstack/crawlstack/shared/port/queue/queuetest"
	"github.com/crawlstack/crawlstack/shared/testkit/awstest"
)

func newQueue(t *testing.T) *sqsqueue.Queue {
	t.Helper()
	cfg := awstest.Config(t)
	awstest.RequireService(t, "SQS")
	return sqsqueue.New(sqs.NewFromConfig(cfg))
}

// TestIntegrationConformance runs the queue port's conformance suite against SQS at the
// configured endpoint.
func TestIntegrationConformance(t *testing.T) {
	q := newQueue(t)
	queuetest.Run(t, func(t *testing.T) queuetest.Backend { return q })
}

func TestIntegrationCreateQueueTwice(t *testing.T) {
	q := newQueue(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	name := awstest.UniqueName(t, "sqs")
	first, err := q.CreateQueue(ctx, name, queue.Config{Visibility: 30 * time.Second})
	if err != nil {
		t.Fatalf("CreateQueue: %v", err)
	}
	// Other attributes: SQS answers QueueAlreadyExists, which CreateQueue must absorb.
	second, err := q.CreateQueue(ctx, name, queue.Config{Visibility: 45 * time.Second})
	if err != nil {
		t.Fatalf("CreateQueue again: %v", err)
	}
	if first != second {
		t.Errorf("CreateQueue again = %q, want %q", second, first)
	}
}

func TestIntegrationMissingQueue(t *testing.T) {
	q := newQueue(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	addr, err := q.CreateQueue(ctx, awstest.UniqueName(t, "sqs"), queue.Config{})
	if err != nil {
		t.Fatalf("CreateQueue: %v", err)
	}
	missing := addr + "-missing"
	if _, _, err := q.Depth(ctx, missing); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("Depth of a missing queue: err = %v, want queue.ErrNotFound", err)
	}
}
