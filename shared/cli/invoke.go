package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/awsports"
	"github.com/crawlstack/crawlstack/shared/pipeline"
)

// invokeFunctions are the handlers `crawl invoke` can run, by their Lambda function's name.
var invokeFunctions = map[string]bool{"schedule": true, "fetch": true, "parse": true}

// invoke runs one handler once on a JSON event file and prints its response, as `sam local invoke`
// does. With the aws backend (the default) the handler is wired exactly as in the Lambda mains,
// from the environment (awsports.NewHandlers), with --allow-net added to CRAWL_ALLOW_NET:
// AWS_ENDPOINT_URL* pick LocalStack, the emulators or a real account. With the embedded backend it
// runs on a state directory, as `crawl run` does.
func invoke(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("invoke", flag.ContinueOnError)
	fs.SetOutput(stderr)
	backend := fs.String("backend", "aws", "aws (configured from the environment, as the Lambda functions are) or embedded")
	state := fs.String("state", "crawl-state", "state directory of the embedded backend")
	timeout := fs.Duration("timeout", 5*time.Minute, "how long the handler may run, as a function timeout")
	hostRPS := fs.Float64("host-rps", pipeline.DefaultConfig().HostRPS, "requests per second per host, with the embedded backend (0 lifts the limit; the aws backend reads CRAWL_HOST_RPS)")
	var allow []string
	fs.Var((*listFlag)(&allow), "allow-net", "CIDR (or IP) of a non-public range that may be fetched, added to CRAWL_ALLOW_NET with the aws backend; repeatable")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: crawl invoke [flags] schedule|fetch|parse EVENTFILE")
		fs.PrintDefaults()
	}
	var logs LogFlags
	logs.register(fs, "info")
	if err := fs.Parse(args); err != nil {
		return usageError(stderr, err)
	}
	if fs.NArg() != 2 {
		fs.Usage()
		fmt.Fprintf(stderr, "crawl invoke: want a function and an event file, got %d arguments\n", fs.NArg())
		return ExitUsage
	}
	log, err := logs.Logger(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "crawl invoke: %v\n", err)
		return ExitUsage
	}
	fn, file := fs.Arg(0), fs.Arg(1)
	if !invokeFunctions[fn] {
		fmt.Fprintf(stderr, "crawl invoke: unknown function %q: want schedule, fetch or parse\n", fn)
		return ExitUsage
	}
	if *backend != "aws" && *backend != "embedded" {
		fmt.Fprintf(stderr, "crawl invoke: --backend %q: want aws or embedded\n", *backend)
		return ExitUsage
	}
	if err := stateOnlyEmbedded(fs, *backend); err != nil {
		fmt.Fprintf(stderr, "crawl invoke: %v\n", err)
		return ExitUsage
	}
	rps := false
	fs.Visit(func(f *flag.Flag) { rps = rps || f.Name == "host-rps" })
	if rps && *backend == "aws" {
		fmt.Fprintln(stderr, "crawl invoke: --host-rps is for the embedded backend; the aws backend reads CRAWL_HOST_RPS, as the functions do")
		return ExitUsage
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintf(stderr, "crawl invoke: cannot read the event file: %v\n", err)
		return ExitUsage
	}
	if !json.Valid(raw) {
		fmt.Fprintf(stderr, "crawl invoke: %s is not a JSON document\n", file)
		return ExitUsage
	}
	h, closeFn, err := invokeHandlers(ctx, *backend, *state, *hostRPS, allow, log)
	if err != nil {
		fmt.Fprintf(stderr, "crawl invoke: %v\n", err)
		return ExitFailed
	}
	defer closeFn()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	out, err := invokeOnce(ctx, h, fn, raw)
	if err != nil {
		// Lambda's error response, so that scripts see the same shape as from `aws lambda invoke`.
		writeJSON(stdout, map[string]string{"errorMessage": err.Error(), "errorType": errorType(err)})
		fmt.Fprintf(stderr, "crawl invoke: %s failed: %v\n", fn, err)
		return ExitFailed
	}
	if err := writeJSON(stdout, out); err != nil {
		fmt.Fprintf(stderr, "crawl invoke: %v\n", err)
		return ExitFailed
	}
	return ExitOK
}

// invokeHandlers builds the handlers on the chosen backend and returns what releases them.
func invokeHandlers(ctx context.Context, backend, state string, hostRPS float64, allow []string, log *slog.Logger) (*pipeline.Handlers, func(), error) {
	if backend == "aws" {
		h, err := awsports.NewHandlers(ctx, allowNetEnv(os.Getenv, allow), log)
		if err != nil {
			return nil, nil, fmt.Errorf("configure the handlers from the environment (or use --backend embedded): %w", err)
		}
		return h, h.Close, nil
	}
	be, err := OpenEmbedded(state)
	if err != nil {
		return nil, nil, err
	}
	cfg := pipeline.DefaultConfig()
	res, err := be.Setup(ctx, QueueSettings{Visibility: 30 * time.Second, MaxReceiveCount: cfg.MaxReceive})
	if err != nil {
		be.Close()
		return nil, nil, fmt.Errorf("set up the embedded backend: %w", err)
	}
	cfg.ScheduleQueue, cfg.FetchQueue, cfg.ParseQueue = res.Schedule, res.Fetch, res.Parse
	cfg.AllowNets, cfg.HostRPS = allow, hostRPS
	h, err := pipeline.New(cfg, pipeline.Ports{Queue: be.Queue, Table: be.Table, Blobs: be.Blobs}, log)
	if err != nil {
		be.Close()
		return nil, nil, err
	}
	return h, func() { h.Close(); be.Close() }, nil
}

// allowNetEnv is getenv with the --allow-net ranges added to CRAWL_ALLOW_NET (a comma-separated
// list, as the functions read it), so that the flag widens the aws backend's allow-list as it does
// the embedded one's instead of being ignored.
func allowNetEnv(getenv func(string) string, allow []string) func(string) string {
	if len(allow) == 0 {
		return getenv
	}
	return func(name string) string {
		v := getenv(name)
		if name != "CRAWL_ALLOW_NET" {
			return v
		}
		if strings.TrimSpace(v) == "" {
			return strings.Join(allow, ",")
		}
		return v + "," + strings.Join(allow, ",")
	}
}

// invokeOnce hands the event to the function's handler as lambda.Start would.
func invokeOnce(ctx context.Context, h *pipeline.Handlers, fn string, raw []byte) (any, error) {
	if fn == "schedule" {
		return h.Schedule.Invoke(ctx, raw)
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		return nil, fmt.Errorf("%s: not an SQS event: %w", fn, err)
	}
	if len(ev.Records) == 0 {
		return nil, fmt.Errorf("%s: not an SQS event: no Records", fn)
	}
	handle := h.Fetch.Handle
	if fn == "parse" {
		handle = h.Parse.Handle
	}
	return handle(ctx, ev)
}

// errorType names err's type as the Lambda runtime does in an error response.
func errorType(err error) string {
	t := reflect.TypeOf(err)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

// writeJSON prints v as indented JSON; an SQS response with no failures lists an empty array.
func writeJSON(w io.Writer, v any) error {
	if r, ok := v.(events.SQSEventResponse); ok && r.BatchItemFailures == nil {
		r.BatchItemFailures = []events.SQSBatchItemFailure{}
		v = r
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode the response: %w", err)
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// stateOnlyEmbedded refuses a --state given with the aws backend, which keeps its state in the
// table, queues and bucket its environment names: the directory would be silently ignored.
func stateOnlyEmbedded(fs *flag.FlagSet, backend string) error {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "state" })
	if set && backend == "aws" {
		return errors.New("--state is for the embedded backend; the aws backend uses the table, queues and bucket its environment names")
	}
	return nil
}
