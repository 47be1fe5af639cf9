package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"golang.org/x/term"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
)

// MinWatch is the shortest --watch interval: each refresh on AWS reads the crawl's 128 counter
// shards and six queues' depths (129 read units and 6 SQS requests, about $0.00002).
const MinWatch = time.Second

// clearScreen moves a terminal's cursor home and clears it.
const clearScreen = "\x1b[H\x1b[2J"

// watchStatus shows a crawl's status every interval until it is done (no URL pending and the
// three queues empty) or ctx ends (Ctrl-C). On a terminal each screen replaces the last; to a
// pipe the screens follow one another, and with --json each is one line.
func watchStatus(ctx context.Context, st *crawlstate.Store, be *Backend, crawl string, every time.Duration, asJSON bool, stdout io.Writer, h hints) error {
	tty := false
	if f, ok := stdout.(interface{ Fd() uintptr }); ok && !asJSON {
		tty = term.IsTerminal(int(f.Fd()))
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for first := true; ; first = false {
		s, err := crawlStatus(ctx, st, be, crawl, time.Now(), h)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		switch {
		case asJSON:
			b, _ := json.Marshal(s)
			fmt.Fprintf(stdout, "%s\n", b)
		case tty:
			fmt.Fprint(stdout, clearScreen)
			printStatus(stdout, s)
			fmt.Fprintf(stdout, "  (every %v; Ctrl-C to stop watching)\n", every)
		default:
			if !first {
				fmt.Fprintln(stdout)
			}
			printStatus(stdout, s)
		}
		if drained(s) {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// workQueues are the queues that hold a crawl's work: the slow lane's is there only on a backend
// that has one (a stack deployed before it has not), and counts as empty where it is not.
var workQueues = []string{"schedule", "fetch", "fetchslow", "parse"}

// drained reports whether a crawl has nothing left to do: no URL pending and nothing in its
// backend's three queues (their dead-letter queues aside).
func drained(s Status) bool {
	if s.Seen == 0 || s.Pending != 0 {
		return false
	}
	for _, q := range workQueues {
		if d := s.Queues[q]; d.Visible != 0 || d.InFlight != 0 {
			return false
		}
	}
	return true
}
