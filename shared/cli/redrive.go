package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
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
	dlq, src, err := redrivePair(ctx, be, name)
	if err != nil {
		fmt.Fprintf(stderr, "crawl redrive: %v\n", err)
		return ExitUsage
	}
	n, err := be.Queue.Redrive(ctx, dlq, src)
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

// redrivePair finds the dead-letter queue and source queue of schedule, fetch or parse without
// creating anything: from the stack's *_QUEUE_URL and *_DLQ_URL variables, by name on AWS, or in
// the embedded state directory.
func redrivePair(ctx context.Context, be *Backend, name string) (dlq, src string, err error) {
	if name != "schedule" && name != "fetch" && name != "parse" {
		return "", "", fmt.Errorf("unknown queue %q: want schedule, fetch or parse", name)
	}
	if be.Existing != nil {
		pairs := map[string][2]string{
			"schedule": {be.Existing.ScheduleDLQ, be.Existing.Schedule},
			"fetch":    {be.Existing.FetchDLQ, be.Existing.Fetch},
			"parse":    {be.Existing.ParseDLQ, be.Existing.Parse},
		}
		p := pairs[name]
		if p[0] == "" {
			return "", "", fmt.Errorf("set %s_DLQ_URL (a stack output) to redrive %s", strings.ToUpper(name), name)
		}
		return p[0], p[1], nil
	}
	if be.Find == nil { // the embedded backend: the queues live in the state directory
		res, err := be.Setup(ctx, QueueSettings{Visibility: 30 * time.Second, MaxReceiveCount: 5})
		if err != nil {
			return "", "", err
		}
		pairs := map[string][2]string{"schedule": {res.ScheduleDLQ, res.Schedule}, "fetch": {res.FetchDLQ, res.Fetch}, "parse": {res.ParseDLQ, res.Parse}}
		return pairs[name][0], pairs[name][1], nil
	}
	if dlq, err = be.Find(ctx, be.QueuePrefix+name+"-dlq"); err != nil {
		return "", "", fmt.Errorf("%w (is CRAWL_QUEUE_PREFIX right? for a deployed stack set the *_QUEUE_URL and *_DLQ_URL variables)", err)
	}
	if src, err = be.Find(ctx, be.QueuePrefix+name); err != nil {
		return "", "", err
	}
	return dlq, src, nil
}
