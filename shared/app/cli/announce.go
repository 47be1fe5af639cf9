package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/crawlstack/crawlstack/shared/crawl/layout"

	"github.com/crawlstack/crawlstack/shared/app/pipeline"
	"github.com/crawlstack/crawlstack/shared/crawl/finish"
)

// A crawl's end, announced once (package finish). `crawl run` sends no drain checks: it sees the
// end itself, when its queues run out (localrun), and announces then the end of every crawl the
// run finished, as the stack's checks do, with the same once-only record on the crawl item. Its
// event goes beside the crawl's seed report (eventbus.BlobPublisher), in EventBridge's envelope.

// runBy is what decides a crawl's end when `crawl run` does (crawlstate.Checks.EndBy).
const runBy = "crawl run"

// announceEnd announces the end of s's crawl, and of each crawl of s.Also, when it finished: it
// sets their Event (the one decided, by this run or before it) and says where it was written. It
// returns false when an end could not be announced: the run that tries again announces it.
func announceEnd(ctx context.Context, h *pipeline.Handlers, be *Backend, s *Summary, stderr io.Writer) bool {
	ok := true
	one := func(a *Summary) {
		if !a.Finished || a.Crawl == "" || h.Finish == nil {
			return
		}
		e, put, err := h.Finish.End(ctx, a.Crawl, runBy, a.tally)
		if err != nil {
			fmt.Fprintf(stderr, "crawl: announce the end of crawl %s: %v (run the same command again to announce it)\n", a.Crawl, err)
			ok = false
			return
		}
		a.Event, a.eventFile = &e, be.Where(layout.Finished(a.Crawl))
		if put {
			fmt.Fprintf(stderr, "crawl: crawl %s ended (%s): its %q event is in %s\n", a.Crawl, e.End, finish.DetailType, a.eventFile)
		}
	}
	one(s)
	for i := range s.Also {
		one(&s.Also[i])
	}
	return ok
}
