package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	samples "github.com/crawlstack/crawlstack/events"

	"github.com/crawlstack/crawlstack/shared/app/awsports"
	"github.com/crawlstack/crawlstack/shared/app/pipeline"
	"github.com/crawlstack/crawlstack/shared/aws/awssecrets"
	"github.com/crawlstack/crawlstack/shared/port/blob"
)

// invokeFunctions are the handlers `crawl invoke` can run, by their Lambda function's name.
var invokeFunctions = map[string]bool{"schedule": true, "fetch": true, "parse": true}

// invokeHelp is the help of `crawl invoke`.
var invokeHelp = cmdHelp{
	usage: "crawl invoke [flags] schedule|fetch|parse EVENTFILE",
	about: "Run one handler once on a JSON event file and print its response, as sam local invoke does.",
	examples: `crawl invoke schedule events/s3-put-seed.json
crawl invoke fetch events/sqs-fetch.json`,
}

// invoke runs one handler once on a JSON event file and prints its response, as `sam local invoke`
// does. With the aws backend the handler is wired exactly as in the Lambda mains,
// from the environment (awsports.NewHandlers), with --allow-net added to CRAWL_ALLOW_NET:
// AWS_ENDPOINT_URL* pick LocalStack, the emulators or a real account. With the embedded backend it
// runs on a state directory, as `crawl run` does: the default, as for every command.
func invoke(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("invoke", flag.ContinueOnError)
	backend := fs.String("backend", "embedded", "embedded (a state directory, as crawl run uses), or aws (configured from the environment, as the Lambda functions are)")
	state := fs.String("state", "crawl-state", "state directory of the embedded backend")
	timeout := fs.Duration("timeout", 5*time.Minute, "how long the handler may run, as a function timeout")
	hostRPS := fs.Float64("host-rps", pipeline.DefaultConfig().HostRPS, "requests per second per host, with the embedded backend (0 lifts the limit; the aws backend reads CRAWL_HOST_RPS)")
	var allow []string
	fs.Var((*listFlag)(&allow), "allow-net", "CIDR (or IP) of a non-public range that may be fetched, added to CRAWL_ALLOW_NET with the aws backend; repeatable")
	var logs LogFlags
	logs.register(fs, "info")
	if err := parseFlags(fs, args, invokeHelp); err != nil {
		return usageError(stdout, stderr, "invoke", err)
	}
	if fs.NArg() != 2 {
		return usageError(stdout, stderr, "invoke", fmt.Errorf("want a function and an event file, got %d arguments%s", fs.NArg(), quotedArgs(fs.Args())))
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
	h, closeFn, err := invokeHandlers(ctx, *backend, *state, file, *hostRPS, allow, log)
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
func invokeHandlers(ctx context.Context, backend, state, eventFile string, hostRPS float64, allow []string, log *slog.Logger) (*pipeline.Handlers, func(), error) {
	if backend == "aws" {
		h, err := awsports.NewHandlers(ctx, allowNetEnv(os.Getenv, allow), log, awssecrets.Reader{})
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
	if err := loadBlobs(ctx, be.Blobs, filepath.Join(filepath.Dir(eventFile), samples.BlobsDir), log); err != nil {
		be.Close()
		return nil, nil, err
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

// loadBlobs puts the files under dir (the blobs/ folder beside an event file, as events/ has one)
// into the bucket, each under its path in dir, unless an object is there already: the objects the
// sample events make their handlers read, so that every sample runs as it is. No dir, nothing to do.
func loadBlobs(ctx context.Context, store blob.Store, dir string, log *slog.Logger) error {
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		body, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		switch err := store.PutIfAbsent(ctx, filepath.ToSlash(rel), body, "application/octet-stream"); {
		case errors.Is(err, blob.ErrExists):
		case err != nil:
			return fmt.Errorf("put %s into the bucket: %w", rel, err)
		default:
			n++
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if n > 0 {
		log.Info("put the objects the samples read into the bucket", "from", dir, "objects", n)
	}
	return err
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
