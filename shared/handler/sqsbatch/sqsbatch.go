// Package sqsbatch runs a handler over the records of one SQS event the way AWS recommends for
// partial batch responses: each record is processed on its own, a panic or error fails only that
// record, and the response lists the failures in BatchItemFailures (the event source mapping must
// have ReportBatchItemFailures). Each record runs in a span of its own (package telemetry), linked to
// the span that sent it. Poison records (errclass.Poison) are quarantined with their reason
// and acknowledged, so they never block the queue (DESIGN invariant 8).
package sqsbatch

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"sync"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/observe/telemetry"
)

// Quarantiner keeps a poison record and its reason somewhere a person can look.
type Quarantiner interface {
	Quarantine(ctx context.Context, rec events.SQSMessage, reason error) error
}

// Runner processes batches.
type Runner struct {
	// Quarantine receives poison records; nil fails them instead (they reach the DLQ).
	Quarantine Quarantiner
	// Concurrency is how many records of one batch run at once (default 1).
	Concurrency int
	Log         *slog.Logger
}

// Run calls fn for each record and returns the partial batch response.
func (r *Runner) Run(ctx context.Context, ev events.SQSEvent, fn func(context.Context, events.SQSMessage) error) events.SQSEventResponse {
	n := max(r.Concurrency, 1)
	failed := make([]bool, len(ev.Records))
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	for i, rec := range ev.Records {
		sem <- struct{}{}
		wg.Add(1)
		pool.Go(func() {
			defer func() { <-sem; wg.Done() }()
			failed[i] = !r.One(ctx, rec, fn) // One recovers a panic
		})
	}
	wg.Wait()
	var resp events.SQSEventResponse
	for i, f := range failed {
		if f {
			resp.BatchItemFailures = append(resp.BatchItemFailures,
				events.SQSBatchItemFailure{ItemIdentifier: ev.Records[i].MessageId})
		}
	}
	return resp
}

// One processes a record and reports whether it may be deleted: in a span of its own, a panic
// failing only it, and poison quarantined with its reason and acknowledged. A handler that works
// on a record in pieces (fetch, one piece per URL) calls it for each piece.
func (r *Runner) One(ctx context.Context, rec events.SQSMessage, fn func(context.Context, events.SQSMessage) error) (ok bool) {
	// The record's logger is made only when there is something to log: With costs more than a
	// record's whole bookkeeping, and almost every record succeeds.
	log := func() *slog.Logger {
		return r.logger().With("messageId", rec.MessageId, "receiveCount", ReceiveCount(rec))
	}
	ctx, span := telemetry.StartRecord(ctx, rec)
	var err error
	defer func() { telemetry.EndRecord(span, err) }()
	defer func() {
		if p := recover(); p != nil {
			log().ErrorContext(ctx, "record panicked", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			err, ok = fmt.Errorf("panic: %v", p), false
		}
	}()
	err = fn(ctx, rec)
	if err == nil {
		return true
	}
	if errclass.Of(err) != errclass.Poison {
		log().WarnContext(ctx, "record failed", "class", errclass.Of(err), "err", err.Error())
		return false
	}
	if r.Quarantine == nil {
		log().ErrorContext(ctx, "poison record, no quarantine: failing it", "err", err.Error())
		return false
	}
	if qerr := r.Quarantine.Quarantine(ctx, rec, err); qerr != nil {
		log().ErrorContext(ctx, "quarantine failed", "err", qerr.Error(), "reason", err.Error())
		return false
	}
	log().WarnContext(ctx, "poison record quarantined", "reason", err.Error())
	return true
}

func (r *Runner) logger() *slog.Logger {
	if r.Log != nil {
		return r.Log
	}
	return slog.Default()
}

// ReceiveCount returns the record's ApproximateReceiveCount (1 when missing or malformed).
func ReceiveCount(rec events.SQSMessage) int {
	n, err := strconv.Atoi(rec.Attributes["ApproximateReceiveCount"])
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// Each runs fn for i in [0, n) with at most limit at once, and returns id(i) for every item whose
// fn failed or panicked, in no particular order. Handlers use it for the per-record writes that
// end a batch, so that the writes share commits and round trips.
func Each(n, limit int, id func(i int) string, fn func(i int) error) []string {
	var mu sync.Mutex
	var failed []string
	sem := make(chan struct{}, max(limit, 1))
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		pool.Go(func() {
			defer func() { <-sem; wg.Done() }()
			if err := safely(func() error { return fn(i) }); err != nil {
				mu.Lock()
				failed = append(failed, id(i))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return failed
}

// safely runs fn, turning a panic into an error.
func safely(fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
		}
	}()
	return fn()
}

// Collect runs a batch in two stages, for handlers that store a batch's results together (one
// object per batch instead of one per record): first each record through process, as Run does,
// keeping the results it returns (nil: the record is done with nothing to store); then store with
// every result, which returns the message ids whose storing failed. Both kinds of failure end up
// in BatchItemFailures.
func Collect[T any](ctx context.Context, r *Runner, ev events.SQSEvent,
	process func(context.Context, events.SQSMessage) (*T, error),
	store func(context.Context, []T) []string) events.SQSEventResponse {
	var mu sync.Mutex
	var results []T
	resp := r.Run(ctx, ev, func(ctx context.Context, rec events.SQSMessage) error {
		res, err := process(ctx, rec)
		if err == nil && res != nil {
			mu.Lock()
			results = append(results, *res)
			mu.Unlock()
		}
		return err
	})
	for _, id := range store(ctx, results) {
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
	}
	return resp
}
