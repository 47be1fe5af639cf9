package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// An interrupt in two steps. The first (Ctrl-C, or SIGTERM) ends the run's context, as
// signalContext does: the runner takes no new batch and gives back those received ahead, and the
// batches in flight go on to the end, so that their pages are saved and none is fetched again by
// the next run; their handlers start no new request (turn.Stopping), so that the end comes soon. The context returned here, under which those batches work, ends at a second
// interrupt, or when the grace has passed: then they are cut short, as a kill would.

// graceful returns the context the handlers of a run work under: it ends at a second interrupt,
// or grace after ctx ends. When the batches in flight take more than graceNotice to finish, it
// says on w what the run waits for. The returned function releases the signals; call it when the
// run is over.
func graceful(ctx context.Context, grace time.Duration, w io.Writer) (context.Context, func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	abort, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		signals := 0
		stopped := ctx.Done()
		var notice, timeUp <-chan time.Time
		for {
			select {
			case <-done:
				return
			case <-sigs:
				// Every interrupt reaches this channel, the first one (which ended ctx) too.
				if signals++; signals >= 2 {
					cancel()
					return
				}
			case <-stopped:
				stopped = nil
				notice, timeUp = time.After(graceNotice), time.After(grace)
			case <-notice:
				fmt.Fprintf(w, "crawl: stopping: the batches in flight finish first, so that no page is fetched twice (at most %s; Ctrl-C again stops at once)\n", grace)
			case <-timeUp:
				cancel()
				return
			}
		}
	}()
	return abort, func() {
		close(done)
		<-finished
		signal.Stop(sigs)
		cancel()
	}
}

// graceNotice is how long a stop may take before the run says what it waits for: a stop that
// ends at once prints no more than its summary.
const graceNotice = time.Second

// cutShortNote is what the interrupted run's last line adds when a second interrupt, or the end
// of the grace, cut batches short.
func cutShortNote(cut int64) string {
	if cut == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d batches in flight were cut short: their URLs are fetched again)", cut)
}
