// Package localrun plays the part of Lambda's SQS event source mapping on a laptop: it polls each
// queue, hands the handler the same events.SQSEvent batches Lambda would, deletes the records the
// handler did not report in BatchItemFailures, and leaves the failures to become visible again
// after the visibility timeout (and to reach the DLQ after maxReceiveCount), exactly as on AWS.
// Like the mapping, it gathers a batch larger than one receive (10 messages) over several
// receives, until the batch is full or its batching window has passed.
//
// Run returns when every queue is empty (nothing visible, in flight or delayed), or when its
// context ends. RunGraceful stops in two steps, as a Ctrl-C that lets the batches in flight finish.
package localrun

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/handler/sqsbatch"
	"github.com/crawlstack/crawlstack/shared/port/queue"
	"github.com/crawlstack/crawlstack/shared/port/turn"
)

// Queues is what the runner needs of the queue backend.
type Queues interface {
	queue.Receiver
	Depth(ctx context.Context, queue string) (visible, notVisible int, err error)
}

// Invoke is a handler of SQS batches.
type Invoke func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)

// Source is one event source mapping: a queue and the handler that consumes it.
type Source struct {
	Name    string
	Queue   string
	Handler Invoke
	// Pollers is how many batches are in flight at once (Lambda's MaximumConcurrency).
	Pollers int
	// BatchSize is the most records per batch. A receive returns at most queue.MaxBatch (10)
	// messages, so a larger batch gathers several receives within Window.
	BatchSize int
	// Window is how long a batch gathers records after its first one, as the mapping's
	// MaximumBatchingWindowInSeconds: the handler gets the batch once it holds BatchSize records or
	// Window has passed, whichever comes first. 0 hands over what one receive returns. On SQS a
	// long poll waits whole seconds, so a batch may wait up to a second past its window there.
	Window time.Duration
	// Visibility is the visibility timeout of received messages.
	Visibility time.Duration
	// Poll is how long a receive waits for a batch's first message (a long poll; 0: a second).
	// Lambda's pollers wait 20 s, so an idle queue costs few requests.
	Poll time.Duration
	// Spare is how many more batches may be worked on while handlers wait: a handler that calls
	// turn.GiveBack lets one spare take a batch until it returns (spare.go). 0: none.
	Spare int
}

// Stats counts what the runner did.
type Stats struct {
	Batches, Records, Failures, Panics atomic.Int64
	// GivenBack counts the batches received but never handled, because the run stopped: their
	// messages were made visible again at once.
	GivenBack atomic.Int64
	// CutShort counts the batches whose handler was still running when RunGraceful's abort ended.
	CutShort atomic.Int64
	// IdleChecks counts the looks for the end of the run.
	IdleChecks atomic.Int64
}

// Runner polls the sources.
type Runner struct {
	Queues  Queues
	Sources []Source
	Log     *slog.Logger
	// IdleCheck is how often the runner looks for an empty pipeline (default 100 ms); it also looks
	// whenever the last batch in hand is done. Each look asks every queue for its depth: one local
	// query on the embedded queue, a billed request per queue on SQS.
	IdleCheck time.Duration
	Stats     Stats

	// busy counts the batches received and not yet deleted: the work a look at the queues can
	// miss while a handler moves a message from a queue not yet counted to one already counted.
	busy atomic.Int64
	// settled is signalled when busy falls to zero, so that the end of the work is seen at once.
	settled chan struct{}
	// inHand holds the queue and id of every message received and not yet done with (see take).
	inHand sync.Map
}

// Run polls every source until all queues are empty or ctx ends. It returns ctx's error when
// interrupted, and nil when the work ran out. An interrupt cuts the batches in flight short: their
// messages are delivered again (RunGraceful lets them finish).
func (r *Runner) Run(ctx context.Context) error {
	return r.RunGraceful(ctx, ctx)
}

// RunGraceful is Run with a stop in two steps. When stop ends, the runner takes no new batch, and
// gives back at once the batches received ahead of their handler (their messages become visible
// again); the batches being handled go on until they finish, their successes are deleted, and then
// it returns stop's error. Their handlers see turn.Stopping from then on: they finish what they
// started and start nothing new. When abort ends, the handlers' context ends too, which cuts the batches
// still in flight short, as Run does (Stats.CutShort counts them). abort must not end before stop
// does for a run to stop gracefully; the caller bounds the grace by ending abort.
func (r *Runner) RunGraceful(stop, abort context.Context) error {
	log := r.Log
	if log == nil {
		log = slog.Default()
	}
	// rctx ends the receives (stop, or the end of the work); hctx is the handlers' (abort).
	rctx, endReceives := context.WithCancel(stop)
	defer endReceives()
	hctx, endHandlers := context.WithCancel(abort)
	defer endHandlers()
	r.settled = make(chan struct{}, 1)
	var wg sync.WaitGroup
	for _, s := range r.Sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.runSource(rctx, hctx, s, log.With("fn", s.Name))
		}()
	}
	err := r.waitIdle(rctx, log)
	endReceives()
	wg.Wait()
	return err
}

// runSource runs s's pollers until rctx ends. Like Lambda's pollers, each receives the next batch
// while a handler works on the current one, and deletes a finished batch's successes while the
// handler goes on to the next: neither round trip to the queue waits between two invocations.
// The batches received go to any of the source's handler loops: its Pollers, and the spares that
// work while a handler waits (spare.go), so that a batch received ahead need not wait for the
// handler that waits. A batch's handler runs under hctx.
func (r *Runner) runSource(rctx, hctx context.Context, s Source, log *slog.Logger) {
	batches := make(chan received) // unbuffered: each receiver holds at most one batch ahead
	var receivers, handlers sync.WaitGroup
	var l *lender
	if s.Spare > 0 {
		l = newLender()
	}
	for i := 0; i < max(s.Pollers, 1); i++ {
		receivers.Add(1)
		go func() {
			defer receivers.Done()
			r.receive(rctx, hctx, s, batches, log)
		}()
		handlers.Add(1)
		go func() {
			defer handlers.Done()
			r.handle(rctx, hctx, s, batches, l, log)
		}()
	}
	for i := 0; i < s.Spare; i++ {
		handlers.Add(1)
		go func() {
			defer handlers.Done()
			r.handleSpare(rctx, hctx, s, batches, l, log)
		}()
	}
	receivers.Wait()
	close(batches)
	handlers.Wait()
}

// handle is one of s's handler loops: it invokes the handler on each batch received until the
// receivers are done, and gives back a batch received as the run stopped. A handler that waits
// lends its turn to l's spares (nil: the source has none).
func (r *Runner) handle(rctx, hctx context.Context, s Source, batches <-chan received, l *lender, log *slog.Logger) {
	var deletes sync.WaitGroup
	defer deletes.Wait()
	for b := range batches {
		r.handleOne(rctx, hctx, s, b, l, &deletes, log)
	}
}

// handleOne invokes the handler on b, or gives b back if the run stopped, and leaves its deletes
// to a goroutine that deletes counts.
func (r *Runner) handleOne(rctx, hctx context.Context, s Source, b received, l *lender, deletes *sync.WaitGroup, log *slog.Logger) {
	if rctx.Err() != nil {
		r.giveBack(s, b, log) // handed over as the run stopped: never started
		return
	}
	// The handler learns of the stop (turn.Stopping) and starts no new work, so that its batch
	// ends well inside the grace: only what it had started is finished.
	done := r.invoke(turn.WithStop(hctx, rctx.Done()), s, b, l, log)
	if hctx.Err() != nil {
		r.Stats.CutShort.Add(1)
	}
	deletes.Add(1)
	go func() {
		defer deletes.Done()
		r.finish(hctx, s, b, done, log)
	}()
}

// finish deletes a handled batch's successes and lets go of the batch.
func (r *Runner) finish(ctx context.Context, s Source, b received, done []queue.Message, log *slog.Logger) {
	r.delete(ctx, s, done, log)
	r.putDown(s.Queue, b.msgs)
	if r.busy.Add(-1) == 0 {
		r.signalSettled()
	}
}

// received is a batch in hand, kept invisible by the heartbeats of its parts (one per receive)
// until the handler is done with it.
type received struct {
	msgs       []queue.Message
	heartbeats []func()
}

// stopHeartbeat stops the heartbeats of every part of the batch.
func (b received) stopHeartbeat() {
	for _, stop := range b.heartbeats {
		stop()
	}
}

// receive fills batches until rctx ends. The batches' heartbeats run under hctx, so that a batch
// still in hand after the receives stopped stays invisible.
func (r *Runner) receive(rctx, hctx context.Context, s Source, batches chan<- received, log *slog.Logger) {
	for rctx.Err() == nil {
		b, ok := r.gather(rctx, hctx, s, log)
		if !ok {
			continue
		}
		select {
		case batches <- b:
		case <-rctx.Done():
			r.giveBack(s, b, log) // never handled
		}
	}
}

// firstWait is how long a receive waits for the first message of a batch (a long poll) when
// Source.Poll is 0.
const firstWait = time.Second

// PollWait is how long each of s's receives waits for a batch's first message: Poll, or a second.
func (s Source) PollWait() time.Duration {
	if s.Poll > 0 {
		return s.Poll
	}
	return firstWait
}

// gather receives one batch: up to s.BatchSize messages, in receives of at most queue.MaxBatch,
// until the batch is full or s.Window has passed since its first message. It returns false when
// nothing came (an empty poll, a failed receive, or ctx ended). A batch is counted in busy from
// its first message until its deletes are done, and each received part is kept invisible by a
// heartbeat from its receive on, since the records gathered first wait out the window in flight.
// The receives end with ctx, the heartbeats with hctx.
func (r *Runner) gather(ctx, hctx context.Context, s Source, log *slog.Logger) (received, bool) {
	size := max(s.BatchSize, 1)
	var b received
	var deadline time.Time
	for len(b.msgs) < size && ctx.Err() == nil {
		wait := s.PollWait()
		if len(b.msgs) > 0 {
			if wait = time.Until(deadline); wait <= 0 {
				break
			}
		}
		msgs, err := r.Queues.Receive(ctx, s.Queue, min(size-len(b.msgs), queue.MaxBatch), s.Visibility, wait)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			log.Warn("receive failed", "err", err.Error())
			if len(b.msgs) > 0 {
				break // hand over what is in hand
			}
			pause(ctx, time.Second)
			return received{}, false
		}
		if msgs = r.take(s.Queue, msgs); len(msgs) == 0 {
			if len(b.msgs) == 0 {
				return received{}, false // an empty poll: look at ctx, then poll again
			}
			continue
		}
		if len(b.msgs) == 0 {
			// Counted from here until its deletes are done; until then its messages are in
			// flight, so the queue counts them too.
			r.busy.Add(1)
			deadline = time.Now().Add(s.Window)
		}
		b.msgs = append(b.msgs, msgs...)
		b.heartbeats = append(b.heartbeats, r.heartbeat(hctx, s, msgs, log))
		if s.Window <= 0 {
			break
		}
	}
	if len(b.msgs) == 0 {
		return received{}, false
	}
	if ctx.Err() != nil {
		r.giveBack(s, b, log)
		return received{}, false
	}
	return b, true
}

// giveBack lets go of a batch that will not be handled, because the run stops: its messages are
// made visible again at once, for the next run (or another consumer) to take, instead of after
// their visibility timeout. A message whose change fails comes back after its timeout.
func (r *Runner) giveBack(s Source, b received, log *slog.Logger) {
	b.stopHeartbeat()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, m := range b.msgs {
		if err := r.Queues.ChangeVisibility(ctx, s.Queue, r.receipt(s.Queue, m), 0); err != nil {
			log.Debug("give back a message", "messageId", m.ID, "err", err.Error())
		}
	}
	r.putDown(s.Queue, b.msgs)
	r.Stats.GivenBack.Add(1)
	if r.busy.Add(-1) == 0 {
		r.signalSettled()
	}
}

// signalSettled tells waitIdle that no batch is in hand any more.
func (r *Runner) signalSettled() {
	select {
	case r.settled <- struct{}{}:
	default: // a look is due already
	}
}

// invoke runs one batch and returns its successes, to delete. While the handler waits, its turn
// goes to l's spares (l may be nil).
func (r *Runner) invoke(ctx context.Context, s Source, b received, l *lender, log *slog.Logger) []queue.Message {
	msgs := b.msgs
	ev := sqsbatch.Event(s.Name, msgs)
	r.Stats.Batches.Add(1)
	r.Stats.Records.Add(int64(len(msgs)))
	ctx, returned := l.lend(ctx)
	resp, err := safeInvoke(ctx, s.Handler, ev)
	returned()
	b.stopHeartbeat()
	if err != nil {
		// A returned error fails the whole batch, as in Lambda.
		if errors.Is(err, errPanic) {
			r.Stats.Panics.Add(1)
		}
		r.Stats.Failures.Add(int64(len(msgs)))
		log.Error("handler failed the whole batch", "records", len(msgs), "err", err.Error())
		return nil
	}
	failed := make(map[string]bool, len(resp.BatchItemFailures))
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	r.Stats.Failures.Add(int64(len(failed)))
	var done []queue.Message
	for _, m := range msgs {
		if !failed[m.ID] {
			done = append(done, m)
		}
	}
	return done
}

// delete removes a batch's successes. It uses a context of its own: a finished record must not be
// redone because the run was interrupted right after it. The deletes of a batch go out in one
// DeleteBatch call: the SQS adapter sends them as DeleteMessageBatch requests of 10, as Lambda
// does, and the embedded queue commits them at once.
func (r *Runner) delete(ctx context.Context, s Source, done []queue.Message, log *slog.Logger) {
	if len(done) == 0 {
		return
	}
	receipts := make([]string, len(done))
	for i, m := range done {
		receipts[i] = r.receipt(s.Queue, m) // a copy received meanwhile holds the newest handle
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := r.Queues.DeleteBatch(dctx, s.Queue, receipts); err != nil {
		log.Warn("delete failed: the records will be delivered again", "records", len(done), "err", err.Error())
	}
}

// heartbeat keeps the batch's messages invisible while the handler works on them, by extending
// their visibility every third of the timeout: a beat that fails (throttled) or comes late leaves
// the next one time to land before the messages are visible again. A message that became visible
// is received again, and its receive count grows towards the DLQ's maxReceiveCount as if its
// handler had failed. Lambda needs no such thing, because its function timeout is at most a sixth
// of the visibility timeout; a laptop run has no function timeout, and a short visibility keeps
// resuming after a crash quick. It returns a function that stops it.
func (r *Runner) heartbeat(ctx context.Context, s Source, msgs []queue.Message, log *slog.Logger) func() {
	if s.Visibility <= 0 {
		return func() {}
	}
	return Every(ctx, s.Visibility/3, func() {
		for _, m := range msgs {
			if err := r.Queues.ChangeVisibility(ctx, s.Queue, r.receipt(s.Queue, m), s.Visibility); err != nil && ctx.Err() == nil {
				log.Debug("extend visibility", "messageId", m.ID, "err", err.Error())
			}
		}
	})
}

// Every calls fn every d, in a goroutine of its own, until ctx ends or the returned stop is
// called. stop returns once fn is no longer running.
func Every(ctx context.Context, d time.Duration, fn func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			fn()
		}
	}()
	return func() { close(done); wg.Wait() }
}

// MaxFailedLooks is how many looks for the end of the run may fail in a row (a throttled or
// briefly unreachable queue service) before Run gives up with the last look's error.
const MaxFailedLooks = 5

var errPanic = errors.New("handler panicked")

func safeInvoke(ctx context.Context, h Invoke, ev events.SQSEvent) (resp events.SQSEventResponse, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v\n%s", errPanic, p, debug.Stack())
		}
	}()
	return h(ctx, ev)
}

func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
