package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// redrive moves the messages of a dead-letter queue back to its source queue.
func redrive(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var classes string
	o, rest, err := adminFlags("redrive", "[--class a,b] schedule|fetch|parse|render", args, nil, func(fs *flag.FlagSet) {
		fs.StringVar(&classes, "class", "", "fetch only: move back only the messages whose URLs failed with these classes (http_5xx,timeout,...); the rest stay")
	})
	if err != nil {
		return usageError(stdout, stderr, "redrive", err)
	}
	if len(rest) != 1 {
		fmt.Fprintln(stderr, "usage: crawl redrive [--state DIR] [--backend embedded|aws] [--class a,b] schedule|fetch|parse|render")
		return ExitUsage
	}
	only, err := parseClasses(classes)
	if err != nil {
		fmt.Fprintf(stderr, "crawl redrive: %v\n", err)
		return ExitUsage
	}
	if only != nil && rest[0] != "fetch" {
		fmt.Fprintf(stderr, "crawl redrive: --class is for the fetch queue, whose messages are URLs with a recorded class, not %s\n", rest[0])
		return ExitUsage
	}
	name := rest[0]
	be, err := openExisting(ctx, o)
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
	if only != nil {
		moved, left, err := redriveByClass(ctx, be.Queue, crawlstate.New(be.Table), dlq, src, only)
		if err != nil {
			fmt.Fprintf(stderr, "crawl redrive fetch --class %s: %v (moved %d URLs before)\n", classes, err, moved)
			return ExitFailed
		}
		fmt.Fprintf(stdout, "moved %d URLs of class %s from the fetch dead-letter queue back to fetch; %d URLs of other classes stay\n",
			moved, classes, left)
		nextAfterRedrive(stdout, o, moved)
		return ExitOK
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
	nextAfterRedrive(stdout, o, n)
	return ExitOK
}

// nextAfterRedrive says what processes the messages a redrive moved: on the embedded backend a
// crawl run of the state directory, which needs no seed file; on AWS the stack's functions.
func nextAfterRedrive(w io.Writer, o RunOptions, moved int) {
	switch {
	case moved == 0:
		return
	case o.Backend == "embedded":
		fmt.Fprintf(w, "to process them, run: crawl run --state %s   (no seed file needed: it goes on with what the state holds)\n", o.State)
	default:
		fmt.Fprintln(w, "the stack's functions take them from the queue; without a deployed stack, run: crawl run --backend aws SEEDFILE")
		fmt.Fprintln(w, "a crawl that stalled waiting for them (crawl status says stalled) ends once they are done: crawl resume --backend aws CRAWL starts its checks again")
	}
}

// redrivePair finds the dead-letter queue and source queue of schedule, fetch or parse without
// creating anything (see findQueues).
func redrivePair(ctx context.Context, be *Backend, name string) (dlq, src string, err error) {
	if name == "fetchslow" {
		return "", "", errors.New("fetchslow, the slow lane, shares fetch's dead-letter queue: crawl redrive fetch moves its messages back to fetch, which works a run as the lane does")
	}
	if name != "schedule" && name != "fetch" && name != "parse" && name != "render" {
		return "", "", fmt.Errorf("unknown queue %q: want schedule, fetch, parse or render", name)
	}
	res, err := findQueues(ctx, be)
	if err != nil {
		return "", "", err
	}
	addr := map[string]string{}
	for _, q := range queueNames(&res) {
		addr[q.name] = q.addr
	}
	if addr[name+"-dlq"] == "" {
		return "", "", fmt.Errorf("set %s_DLQ_URL (a stack output) to redrive %s", strings.ToUpper(name), name)
	}
	return addr[name+"-dlq"], addr[name], nil
}

// findQueues finds the crawl queues and their dead-letter queues without creating anything on
// AWS: from the stack's *_QUEUE_URL and *_DLQ_URL variables, or by name; on the embedded backend
// they live in the state directory.
func findQueues(ctx context.Context, be *Backend) (Resources, error) {
	if be.Existing != nil {
		return *be.Existing, nil
	}
	if be.Find == nil { // the embedded backend: the queues live in the state directory
		return be.Setup(ctx, QueueSettings{Visibility: 30 * time.Second, MaxReceiveCount: 5})
	}
	var res Resources
	for _, q := range queueNames(&res) {
		addr, err := be.Find(ctx, be.QueuePrefix+q.name)
		if err != nil && q.optional && errors.Is(err, queue.ErrNotFound) {
			continue // a stack with no render step or slow lane
		}
		if err != nil {
			return res, fmt.Errorf("%w (is CRAWL_QUEUE_PREFIX right? for a deployed stack set the *_QUEUE_URL and *_DLQ_URL variables)", err)
		}
		*q.dst = addr
	}
	return res, nil
}

// namedQueue is one of a backend's queues: its name after the prefix, its address, where
// Resources keeps that, and whether a backend may lack it (the render step's).
type namedQueue struct {
	name, addr string
	dst        *string
	optional   bool
}

// queueNames lists the queues of r.
func queueNames(r *Resources) []namedQueue {
	return []namedQueue{
		{"schedule", r.Schedule, &r.Schedule, false}, {"fetch", r.Fetch, &r.Fetch, false}, {"parse", r.Parse, &r.Parse, false},
		{"schedule-dlq", r.ScheduleDLQ, &r.ScheduleDLQ, false}, {"fetch-dlq", r.FetchDLQ, &r.FetchDLQ, false}, {"parse-dlq", r.ParseDLQ, &r.ParseDLQ, false},
		{"render", r.Render, &r.Render, true}, {"render-dlq", r.RenderDLQ, &r.RenderDLQ, true},
		{"fetchslow", r.FetchSlow, &r.FetchSlow, true}, // its dead-letter queue is fetch's
	}
}
