package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"
)

// redrive moves the messages of a dead-letter queue back to its source queue.
func redrive(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("redrive", flag.ContinueOnError)
	fs.SetOutput(stderr)
	state := fs.String("state", "crawl-state", "state directory of the embedded backend")
	backend := fs.String("backend", "embedded", "embedded or aws")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: crawl redrive [--state DIR] [--backend embedded|aws] schedule|fetch|parse")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return usageError(stderr, err)
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return ExitUsage
	}
	name := fs.Arg(0)
	be, err := openBackend(ctx, RunOptions{Backend: *backend, State: *state})
	if err != nil {
		fmt.Fprintf(stderr, "crawl redrive: %v\n", err)
		return ExitFailed
	}
	defer be.Close()
	res, err := be.Setup(ctx, QueueSettings{Visibility: 30 * time.Second, MaxReceiveCount: 5})
	if err != nil {
		fmt.Fprintf(stderr, "crawl redrive: %v\n", err)
		return ExitFailed
	}
	pairs := map[string][2]string{
		"schedule": {res.ScheduleDLQ, res.Schedule},
		"fetch":    {res.FetchDLQ, res.Fetch},
		"parse":    {res.ParseDLQ, res.Parse},
	}
	p, ok := pairs[name]
	if !ok || p[0] == "" {
		fmt.Fprintf(stderr, "crawl redrive: unknown queue %q (want schedule, fetch or parse; on a deployed stack set the *_DLQ_URL variables)\n", name)
		return ExitUsage
	}
	n, err := be.Queue.Redrive(ctx, p[0], p[1])
	if err != nil {
		fmt.Fprintf(stderr, "crawl redrive %s: %v\n", name, err)
		return ExitFailed
	}
	if n < 0 {
		fmt.Fprintf(stdout, "started moving the %s dead-letter queue back to %s\n", name, name)
	} else {
		fmt.Fprintf(stdout, "moved %d messages from the %s dead-letter queue back to %s\n", n, name, name)
	}
	return ExitOK
}
