package ledger

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/crawl/cost"
)

// batchOf is a batch of n records of crawl from the queue whose ARN is arn.
func batchOf(arn, crawl string, n int) events.SQSEvent {
	ev := events.SQSEvent{Records: make([]events.SQSMessage, n)}
	for i := range ev.Records {
		ev.Records[i] = record(crawl)
		ev.Records[i].MessageId = strconv.Itoa(i)
		ev.Records[i].EventSourceARN = arn
	}
	return ev
}

// TestABatchBooksItsQueuesEmptyReceivesSinceItsPreviousBatch: each batch is booked, besides its
// own receives and deletes (cost.BatchRequests), the receives its queue's pollers made that found
// nothing since the queue's previous batch: pollers x gap / wait, as AWS's pollers long-poll; the
// fraction is carried to the queue's next batch, the first batch of a queue books none, a gap
// longer than cost.MaxPollGap books the bound, and each queue keeps its own gaps.
func TestABatchBooksItsQueuesEmptyReceivesSinceItsPreviousBatch(t *testing.T) {
	const fetch, parse = "arn:aws:sqs:us-east-1:1:fetch", "arn:aws:sqs:us-east-1:1:parse"
	// 5 records of 100: a receive, the one that found nothing more in the window, a delete.
	own := cost.BatchRequests(5, 5, false)
	steps := []struct {
		name  string
		at    time.Duration // the batch's start, from the first
		queue string
		want  int64 // SQS requests booked to the batch
	}{
		{"the first batch of fetch", 0, fetch, own},
		{"the first batch of parse, later: none before it", 30 * time.Second, parse, own},
		{"fetch a minute on: 5 pollers x 60 s / 20 s", time.Minute, fetch, own + 15},
		{"fetch 10 s on: 2.5, 2 booked and half a receive owed", 70 * time.Second, fetch, own + 2},
		{"fetch 6 s on: 1.5 and the half owed", 76 * time.Second, fetch, own + 2},
		{"parse an hour on: the bound, 5 x 300 s / 20 s", 30*time.Second + time.Hour, parse, own + 75},
		{"fetch at the same moment as its last: nothing between", 76 * time.Second, fetch, own},
	}
	b := &books{}
	t0 := time.Date(2026, 12, 5, 23, 0, 0, 0, time.UTC)
	clock := t0
	l := &Ledger{State: b, Polled: true, BatchSize: 100, Now: func() time.Time { return clock }}
	h := l.Wrap(func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
		return events.SQSEventResponse{}, nil
	})
	var booked int64
	for _, s := range steps {
		clock = t0.Add(s.at)
		if _, err := h(context.Background(), batchOf(s.queue, "a", 5)); err != nil {
			t.Fatal(err)
		}
		got := b.units["a"].SQSRequests - booked
		booked = b.units["a"].SQSRequests
		if got != s.want {
			t.Errorf("%s: %d SQS requests booked, want %d", s.name, got, s.want)
		}
	}
}

// TestEmptyReceivesAreSharedByTheBatchsCrawlsAndCountedOnceWhenBatchesOverlap: the receives a
// batch is booked are shared by its crawls as its records are, and batches of one queue that run
// at once (several handlers, several pollers) book the pollers' span once, in whatever order they
// end.
func TestEmptyReceivesAreSharedByTheBatchsCrawlsAndCountedOnceWhenBatchesOverlap(t *testing.T) {
	const q = "arn:aws:sqs:local:0:fetchslow"
	b := &books{}
	t0 := time.Date(2026, 12, 5, 23, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := t0
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	set := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); clock = t0.Add(d) }
	l := &Ledger{State: b, Polled: true, BatchSize: 100, Pollers: 2, PollWait: 20 * time.Second, Now: now}
	// The first batch starts at 0 and holds until the second, started at 40 s, has ended.
	release, secondDone, firstStarted := make(chan struct{}), make(chan struct{}), make(chan struct{})
	h := l.Wrap(func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		if ev.Records[0].MessageId == "first" {
			close(firstStarted)
			<-release
		}
		return events.SQSEventResponse{}, nil
	})
	first := batchOf(q, "a", 10)
	first.Records[0].MessageId = "first"
	set(0)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := h(context.Background(), first); err != nil {
			t.Error(err)
		}
	}()
	<-firstStarted
	set(40 * time.Second)
	// The second batch: 3 records of crawl a, 1 of crawl b.
	second := batchOf(q, "a", 4)
	second.Records[3] = record("b")
	second.Records[3].EventSourceARN = q
	go func() {
		defer close(secondDone)
		if _, err := h(context.Background(), second); err != nil {
			t.Error(err)
		}
	}()
	<-secondDone
	set(80 * time.Second) // the first batch ends last
	close(release)
	<-done
	// The first batch: its own 10 records (a receive, the empty one, a delete), no gap before it.
	// The second: its own (3) and 2 pollers x 40 s / 20 s = 4, shared 3 to a and 1 to b.
	want := cost.BatchRequests(10, 10, false) + cost.BatchRequests(4, 4, false) + 4
	if got := b.units["a"].SQSRequests + b.units["b"].SQSRequests; got != want {
		t.Errorf("%d SQS requests booked in all, want %d", got, want)
	}
	// The second batch's 7 dealt 3 to 1 in whole requests (cost.Units.Share): 5 to a, 2 to b.
	if got := b.units["b"].SQSRequests; got != 2 {
		t.Errorf("crawl b booked %d SQS requests, want 2 (its share of the second batch's 7)", got)
	}
}
