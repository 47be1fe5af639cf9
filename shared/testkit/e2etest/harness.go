package e2etest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/app/pipeline"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/local/localrun"
	"github.com/crawlstack/crawlstack/shared/port/blob"
	"github.com/crawlstack/crawlstack/shared/port/queue"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// Queue is what the harness needs of a backend's queues: to send, to receive for the runner,
// and to count the dead letters.
type Queue interface {
	queue.Sender
	localrun.Queues
}

// Resources are the addresses of a crawl's queues, laid out as shared/app/cli's Resources so that
// either converts to the other.
type Resources struct {
	Schedule, Fetch, Parse          string
	ScheduleDLQ, FetchDLQ, ParseDLQ string
	Render, RenderDLQ               string
	// FetchSlow is the slow lane's queue (its DLQ is FetchDLQ): the runs of polite hosts.
	FetchSlow string
}

// StartFunc drops a seed file called name into the backend and starts its crawl, as
// cli.StartCrawl does; it returns the crawl's id.
type StartFunc func(ctx context.Context, res Resources, name string, body []byte) (string, error)

// RunnerFunc builds the local runner of the three handlers, as cli.NewRunner does.
type RunnerFunc func(q localrun.Queues, res Resources, hs *pipeline.Handlers, concurrency int, visibility time.Duration, log *slog.Logger) *localrun.Runner

// Backend is what a crawl runs on: the adapters, the crawl's queues in them, and the two steps
// of `crawl run` that start and drive a crawl.
type Backend struct {
	Queue  Queue
	Table  table.Table
	Blobs  blob.Store
	Res    Resources
	Start  StartFunc
	Runner RunnerFunc
}

// NewBackend adapts a backend be of shared/app/cli to the harness: start and newRunner are
// cli.StartCrawl and cli.NewRunner, and R is cli.Resources. The type parameters keep this
// package free of shared/app/cli, whose own tests import it.
func NewBackend[B any, R ~struct {
	Schedule, Fetch, Parse          string
	ScheduleDLQ, FetchDLQ, ParseDLQ string
	Render, RenderDLQ               string
	FetchSlow                       string
}](
	be B, q Queue, tb table.Table, bl blob.Store, res R,
	start func(context.Context, B, R, string, []byte) (string, error),
	newRunner func(localrun.Queues, R, *pipeline.Handlers, int, time.Duration, *slog.Logger) *localrun.Runner,
) Backend {
	return Backend{Queue: q, Table: tb, Blobs: bl, Res: Resources(res),
		Start: func(ctx context.Context, res Resources, name string, body []byte) (string, error) {
			return start(ctx, be, R(res), name, body)
		},
		Runner: func(q localrun.Queues, res Resources, hs *pipeline.Handlers, concurrency int, visibility time.Duration, log *slog.Logger) *localrun.Runner {
			return newRunner(q, R(res), hs, concurrency, visibility, log)
		},
	}
}

// Harness is a loopback demo site and a backend to crawl it on, for one test.
type Harness struct {
	T    testing.TB
	Site *Site
	Backend
	// Visibility is the runner's visibility for the batches it receives (0: the queues' own).
	Visibility time.Duration
	// MaxReceive, when set, is the queues' maxReceiveCount, which Config passes on.
	MaxReceive int
	// Timeout bounds each run (DefaultTimeout when unset): a hang fails the test, saying what was
	// pending, instead of blocking the package.
	Timeout time.Duration
	// SeedsPrefix is where the backend's Start drops seed files (scheduler.SeedsPrefix when empty):
	// the prefix a recrawl tick reads (Tick).
	SeedsPrefix string
	// DLQSettle is how long the dead-letter queues' counts may take to settle (SQS's are
	// approximate and lag); 0 looks once, for a backend whose counts are exact.
	DLQSettle time.Duration
	// Runs crawls the site at RunsRPS with its URLs in runs (shared/crawl/frontier/runs.go): a
	// fetch message of several of the host's URLs, fetched one after another in its slots. A
	// scenario that sets its own rate keeps the runs.
	Runs bool

	// heldAtCrash are the paths of the site's URLs that a worker held (claimed, not yet done) when
	// the last Crash or CrashAt stopped the run: the only pages the resumed run may fetch again.
	heldAtCrash map[string]bool

	// tail keeps the handlers' last log lines, printed when the test fails (logtail.go).
	tail    *logTail
	logOnce sync.Once
}

// QuietLog is a logger that writes nothing, for handlers under test.
func QuietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Config is the pipeline configuration of the tests: the crawl's queues, the loopback site
// allowed, no rate limit.
func (h *Harness) Config() pipeline.Config {
	c := pipeline.DefaultConfig()
	c.ScheduleQueue, c.FetchQueue, c.ParseQueue, c.RenderQueue = h.Res.Schedule, h.Res.Fetch, h.Res.Parse, h.Res.Render
	c.SlowQueue = h.Res.FetchSlow // the slow lane, where the backend has one: runs go there
	c.AllowNets = []string{"127.0.0.0/8"}
	c.HostRPS, c.HostConcurrency = 0, 0
	if h.Runs {
		// Runs at any rate, of at most 6 URLs, so that a site of a few dozen pages makes several.
		c.HostRPS, c.RunMinInterval, c.RunURLs = RunsRPS, time.Millisecond, 6
	}
	if h.MaxReceive > 0 {
		c.MaxReceive = h.MaxReceive
	}
	return c
}

// RunsRPS is the site's rate in a harness with Runs: 50 ms between requests, so that a run of
// 6 URLs waits in place for about a quarter of a second.
const RunsRPS = 20

// Ports are the backend's adapters, unwrapped.
func (h *Harness) Ports() pipeline.Ports {
	return pipeline.Ports{Queue: h.Queue, Table: h.Table, Blobs: h.Blobs}
}

// DefaultTimeout bounds each run of a harness whose Timeout is unset: a crawl that hangs (a
// livelock in a queue, a message that never comes back) fails its test with what was pending,
// well before the go test timeout.
const DefaultTimeout = 2 * time.Minute

// Crawl starts a crawl of seeds (the site alone when empty) with fresh handlers over ports
// (possibly wrapped) and runs the local runner on q until the pipeline is empty or ctx ends.
// It returns the crawl id and the runner's error.
func (h *Harness) Crawl(ctx context.Context, cfg pipeline.Config, ports pipeline.Ports, q localrun.Queues, concurrency int, seeds ...string) (string, error) {
	h.T.Helper()
	if len(seeds) == 0 {
		seeds = []string{h.Site.URL}
	}
	crawl, err := h.Start(ctx, h.Res, "seeds.txt", []byte(strings.Join(seeds, "\n")+"\n"))
	if err != nil {
		h.T.Fatal(err)
	}
	return crawl, h.Run(ctx, crawl, cfg, ports, q, concurrency)
}

// Run runs fresh handlers of cfg over ports on the local runner, receiving from q, until the
// pipeline is empty or ctx ends, and returns the runner's error. It fails the test, saying what
// was pending (in the queues, and crawl's URLs not done), if the run outlasts the harness's
// Timeout (DefaultTimeout when unset).
func (h *Harness) Run(ctx context.Context, crawl string, cfg pipeline.Config, ports pipeline.Ports, q localrun.Queues, concurrency int) error {
	h.T.Helper()
	timeout := h.runTimeout()
	// The run is cancelled when it outlasts timeout, without a deadline on its context: the
	// handlers would take one for the end of a Lambda invocation, and re-queue their work.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := time.AfterFunc(timeout, func() { cancel(errRunTimeout) })
	defer stop.Stop()
	names := []string{pipeline.Schedule, pipeline.Fetch, pipeline.Parse}
	if cfg.RenderQueue != "" {
		names = append(names, pipeline.Render) // with ports.Browser, or none
	}
	if cfg.SlowQueue != "" {
		names = append(names, pipeline.FetchSlow) // the slow lane's own consumer, as in the stack
	}
	hs, err := pipeline.NewOnly(cfg, ports, h.handlerLog(), names...)
	if err != nil {
		h.T.Fatal(err)
	}
	defer hs.Close()
	err = h.Runner(q, h.Res, hs, concurrency, h.Visibility, h.handlerLog()).Run(ctx)
	if errors.Is(context.Cause(ctx), errRunTimeout) {
		h.T.Fatalf("the run did not finish within %v; pending:\n%s", timeout, h.Pending(crawl))
	}
	return err
}

// deadlineMargin is the time a run leaves before the test binary's deadline (go test -timeout), to
// say what was pending and end the test on its own assertion.
const deadlineMargin = 30 * time.Second

// runTimeout is the harness's Timeout (DefaultTimeout when unset), cut to end deadlineMargin
// before the test's deadline: a long run late in a package's tests would otherwise hang until go
// test's timeout panics, naming no assertion and nothing pending.
func (h *Harness) runTimeout() time.Duration {
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if t, ok := h.T.(interface{ Deadline() (time.Time, bool) }); ok {
		if dl, has := t.Deadline(); has {
			timeout = min(timeout, time.Until(dl)-deadlineMargin)
		}
	}
	return timeout
}

// errRunTimeout is the cause of a run cancelled for outlasting its timeout.
var errRunTimeout = errors.New("the run outlasted its timeout")

// Pending says what a crawl still has to do: the messages in each queue (visible, and in flight
// or delayed) and up to 10 of crawl's URLs without a terminal state (none when crawl is empty).
func (h *Harness) Pending(crawl string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b strings.Builder
	for _, q := range []struct{ name, addr string }{
		{"schedule queue", h.Res.Schedule}, {"fetch queue", h.Res.Fetch}, {"parse queue", h.Res.Parse},
		{"schedule DLQ", h.Res.ScheduleDLQ}, {"fetch DLQ", h.Res.FetchDLQ}, {"parse DLQ", h.Res.ParseDLQ},
		{"render queue", h.Res.Render}, {"render DLQ", h.Res.RenderDLQ}, {"fetchslow queue", h.Res.FetchSlow},
	} {
		if q.addr == "" {
			continue // a backend without a render step or a slow lane
		}
		v, nv, err := h.Queue.Depth(ctx, q.addr)
		if err != nil {
			fmt.Fprintf(&b, "  %s: %v\n", q.name, err)
			continue
		}
		fmt.Fprintf(&b, "  %s: %d visible, %d in flight or delayed\n", q.name, v, nv)
	}
	if crawl == "" {
		return b.String()
	}
	const most = 10
	open := 0
	err := crawlstate.New(h.Table).EachURL(ctx, crawl, func(u crawlstate.URL) error {
		if u.State.Terminal() {
			return nil
		}
		if open++; open <= most {
			fmt.Fprintf(&b, "  url %s: %s, owner %q, lease until %s\n", u.URL, u.State, u.Owner, u.Lease.Format(time.RFC3339Nano))
		}
		return nil
	})
	if err != nil {
		fmt.Fprintf(&b, "  the crawl's URLs: %v\n", err)
	}
	fmt.Fprintf(&b, "  %d URLs of crawl %s not done\n", open, crawl)
	return b.String()
}

// CrawlSite crawls the site with the default configuration on the unwrapped backend, and
// fails the test if the run fails.
func (h *Harness) CrawlSite(concurrency int) string {
	h.T.Helper()
	crawl, err := h.Crawl(context.Background(), h.Config(), h.Ports(), h.Queue, concurrency)
	if err != nil {
		h.T.Fatal(err)
	}
	return crawl
}
