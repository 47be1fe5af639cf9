package cli

import (
	"context"
	"fmt"
	"time"
)

// depther tells a queue's visible and hidden (in flight or delayed) messages.
type depther interface {
	Depth(ctx context.Context, name string) (visible, notVisible int, err error)
}

// dueTeller tells when the next hidden message of the queues becomes visible (the embedded queue).
type dueTeller interface {
	NextDue(ctx context.Context, names ...string) (time.Time, error)
}

// reclaimer takes back the messages in flight of a process that is gone (the embedded queue).
type reclaimer interface {
	ReclaimInFlight(ctx context.Context) (int, error)
}

// waitLine returns what the progress line says a crawl waits for when none of the crawl
// queues has a message ready: how many messages are hidden, and when the next one is due if the
// queue can tell. It says nothing while work is ready.
func waitLine(q depther, res Resources) func(ctx context.Context) string {
	names := []string{res.Schedule, res.Fetch, res.Parse}
	return func(ctx context.Context) string {
		hidden := 0
		for _, n := range names {
			v, nv, err := q.Depth(ctx, n)
			if err != nil || v > 0 {
				return ""
			}
			hidden += nv
		}
		if hidden == 0 {
			return ""
		}
		msg := fmt.Sprintf("waiting: %d messages delayed or in flight (politeness waits, retries)", hidden)
		if d, ok := q.(dueTeller); ok {
			if next, err := d.NextDue(ctx, names...); err == nil && !next.IsZero() {
				msg += fmt.Sprintf(", the next due in %s", time.Until(next).Round(100*time.Millisecond))
			}
		}
		return msg
	}
}
