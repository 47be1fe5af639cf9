package localrun

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// The end of a run: the runner looks at the queues until it finds no message anywhere and no batch
// in hand.

// snapshotter is a queue backend that counts several queues' messages (visible, in flight or
// delayed) in one consistent look, as the embedded queue does. One look that finds none then ends
// the run: a message on its way between two queues is always in one of them, since a handler
// sends before its message is deleted. Without such a look (SQS), two looks in a row must agree.
type snapshotter interface {
	Pending(ctx context.Context, queues ...string) (int, error)
}

// waitIdle returns nil once the queues are empty and no batch is in hand: found by one look that
// counts every queue at once (snapshotter), or else by two looks in a row. It looks every
// IdleCheck, and at once whenever the last batch in hand is done.
func (r *Runner) waitIdle(ctx context.Context, log *slog.Logger) error {
	every := r.IdleCheck
	if every <= 0 {
		every = 100 * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	looks := 2
	sn, _ := r.Queues.(snapshotter)
	var names []string
	if sn != nil {
		looks = 1
		for _, s := range r.Sources {
			names = append(names, s.Queue)
		}
	}
	emptyChecks, failedLooks := 0, 0
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		case <-r.settled:
		}
		r.Stats.IdleChecks.Add(1)
		empty, err := r.empty(ctx, sn, names)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// A look that fails says nothing about the work: the pollers go on, and only a queue
			// that keeps failing every look ends the run.
			if failedLooks++; failedLooks >= MaxFailedLooks {
				return fmt.Errorf("%d looks at the queues failed in a row: %w", failedLooks, err)
			}
			log.Warn("look at the queues failed; looking again", "err", err.Error())
			emptyChecks = 0
			continue
		}
		failedLooks = 0
		if !empty {
			emptyChecks = 0
			continue
		}
		if emptyChecks++; emptyChecks >= looks {
			return nil
		}
	}
}

// empty looks once whether every source's queue is empty and no batch is in hand: through sn, at
// the queues called names, when the backend counts them at once (sn is not nil).
func (r *Runner) empty(ctx context.Context, sn snapshotter, names []string) (bool, error) {
	if r.busy.Load() != 0 {
		return false, nil
	}
	if sn != nil {
		n, err := sn.Pending(ctx, names...)
		return err == nil && n == 0 && r.busy.Load() == 0, err
	}
	for _, s := range r.Sources {
		v, nv, err := r.Queues.Depth(ctx, s.Queue)
		if err != nil {
			return false, fmt.Errorf("depth of %s: %w", s.Name, err)
		}
		if v+nv != 0 {
			return false, nil
		}
	}
	return r.busy.Load() == 0, nil
}
