// Package retry decides when a failed fetch is tried again: quick retries with exponential
// backoff and jitter inside one invocation (cenkalti/backoff/v4), and a Deferred error when the
// wait is too long to spend in a Lambda, so the caller re-queues the message with a delay.
// Only error classes that errclass.Retryable accepts are retried.
package retry

import (
	"context"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
)

// The backoff policy of NewBackOff.
const (
	InitialInterval     = 500 * time.Millisecond
	Multiplier          = 2
	RandomizationFactor = 0.5
	MaxInterval         = 8 * time.Second
	MaxElapsedTime      = 2 * time.Minute
)

// NewBackOff returns the crawler's backoff policy: 500 ms doubling up to 8 s, each wait
// randomised by ±50 %, giving up after 2 minutes.
func NewBackOff() backoff.BackOff {
	return backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(InitialInterval),
		backoff.WithMultiplier(Multiplier),
		backoff.WithRandomizationFactor(RandomizationFactor),
		backoff.WithMaxInterval(MaxInterval),
		backoff.WithMaxElapsedTime(MaxElapsedTime),
	)
}

// Deferred is returned when a retryable failure needs a wait longer than the quick budget:
// the caller should re-queue the work with a delay of After instead of sleeping.
type Deferred struct {
	After time.Duration // how long to wait before the next try
	Err   error         // the last failure
}

func (d *Deferred) Error() string { return fmt.Sprintf("retry after %s: %v", d.After, d.Err) }
func (d *Deferred) Unwrap() error { return d.Err }

// Exhausted is returned when the URL has taken every request its Policy allows (PolicyBackOff):
// the caller records it failed.
type Exhausted struct {
	Err error // the last failure
}

func (e *Exhausted) Error() string { return fmt.Sprintf("gave up: %v", e.Err) }
func (e *Exhausted) Unwrap() error { return e.Err }

// countedBackOff is a backoff that counts the requests against a Policy (PolicyBackOff).
type countedBackOff interface {
	Failed(c errclass.Class)
	Spent() bool
}

// Op is one attempt. It returns nil on success, or the failure and, when the server sent one,
// the Retry-After wait (0 when there was none).
type Op func() (retryAfter time.Duration, err error)

// Options tune DoWith. The zero value means NewBackOff, a real timer and no notification.
type Options struct {
	// MaxQuick is the total time Do may wait between attempts in this invocation.
	MaxQuick time.Duration
	// BackOff gives the waits when the server sent no Retry-After. Nil means NewBackOff().
	BackOff backoff.BackOff
	// Timer waits; tests pass one that fires at once. Nil means a real timer.
	Timer backoff.Timer
	// Notify, when set, is called before each wait with the failure and the wait.
	Notify backoff.Notify
	// DeferAfter is the delay put in a Deferred when the backoff policy gives up without a
	// Retry-After to go by. Zero means MaxInterval.
	DeferAfter time.Duration
}

// DoWith runs op until it succeeds, fails with a class that is not retryable (that error is
// returned as is), or needs a wait that does not fit in opts.MaxQuick (a *Deferred is returned).
// A Retry-After returned by op replaces the backoff wait. A cancelled ctx ends DoWith with ctx's
// error.
func DoWith(ctx context.Context, opts Options, op Op) error {
	inner := opts.BackOff
	if inner == nil {
		inner = NewBackOff()
	}
	deferAfter := opts.DeferAfter
	if deferAfter <= 0 {
		deferAfter = MaxInterval
	}
	b := &plannedBackOff{inner: inner}
	var waited time.Duration
	operation := func() error {
		retryAfter, err := op()
		if err == nil {
			return nil
		}
		c := errclass.Of(err)
		if !errclass.Retryable(c) {
			return backoff.Permanent(err)
		}
		if counted, ok := inner.(countedBackOff); ok {
			if counted.Failed(c); counted.Spent() {
				return backoff.Permanent(&Exhausted{Err: err})
			}
		}
		next := retryAfter
		if next <= 0 {
			next = inner.NextBackOff()
		}
		if next == backoff.Stop {
			return backoff.Permanent(&Deferred{After: deferAfter, Err: err})
		}
		if waited+next > opts.MaxQuick {
			return backoff.Permanent(&Deferred{After: next, Err: err})
		}
		waited += next
		b.next = next
		return err
	}
	return backoff.RetryNotifyWithTimer(operation, backoff.WithContext(b, ctx), opts.Notify, opts.Timer)
}

// plannedBackOff hands backoff.Retry the wait that the operation already chose, so that the
// choice between waiting here and deferring is made with the real next interval.
type plannedBackOff struct {
	inner backoff.BackOff
	next  time.Duration
}

func (p *plannedBackOff) NextBackOff() time.Duration { return p.next }
func (p *plannedBackOff) Reset()                     { p.inner.Reset(); p.next = 0 }
