package awsports

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/crawlstack/crawlstack/shared/app/pipeline"
	"github.com/crawlstack/crawlstack/shared/handler/renderer"
	"github.com/crawlstack/crawlstack/shared/observe/ledger"
	"github.com/crawlstack/crawlstack/shared/observe/telemetry"
)

// Function is what a Lambda function's main needs: the handlers, and the ledger that meters
// each invocation into the crawls' records (package ledger).
type Function struct {
	*pipeline.Handlers
	Ledger *ledger.Ledger
	Log    *slog.Logger
	// Telemetry is what the OTEL_* variables ask for (package telemetry): OTLP traces and metrics,
	// or by default metrics as EMF lines on stdout. The main wraps its handler with
	// telemetry.Invocation, which flushes them after each invocation.
	Telemetry *telemetry.Telemetry
}

// NewFunction builds the named handler of a Lambda function (pipeline.Schedule, Fetch or Parse)
// from its environment, as NewHandlers does, and no other: a function's init builds only what it
// runs. The logger is in Lambda's own format and the ledger counts its bytes; the function's
// memory (AWS_LAMBDA_FUNCTION_MEMORY_SIZE, set by Lambda) is what its duration is billed at.
// read reads the stack's secrets (the proxies' and the secret headers'): awssecrets.Reader for
// fetch, nil for the others, which then do not link the SSM and Secrets Manager clients.
func NewFunction(ctx context.Context, getenv func(string) string, handler string, read SecretReader) (*Function, error) {
	return newFunction(ctx, getenv, handler, read, nil)
}

// NewRenderFunction is NewFunction for the render function, whose handler renders with browser.
func NewRenderFunction(ctx context.Context, getenv func(string) string, browser renderer.Browser) (*Function, error) {
	return newFunction(ctx, getenv, pipeline.Render, nil, browser)
}

func newFunction(ctx context.Context, getenv func(string) string, handler string, read SecretReader, browser renderer.Browser) (*Function, error) {
	logs := &ledger.LogCounter{}
	// Lines logged with a context that holds a span carry its trace_id and span_id.
	log := slog.New(telemetry.LogHandler(logs.Handler(lambdacontext.NewLogHandler())))
	// Metrics go to stdout as CloudWatch Embedded Metric Format unless an OTLP endpoint is set.
	// Their lines are log bytes too: the ledger counts them (in the next invocation's share, as they
	// are written after the invocation's units are booked).
	tel, err := telemetry.Setup(ctx, getenv, telemetry.Options{Service: "crawlstack-" + handler,
		EMF: logs.Writer(os.Stdout)})
	if err != nil {
		return &Function{Log: log}, err
	}
	h, err := newHandlers(ctx, getenv, log, read, browser, handler)
	if err != nil {
		return &Function{Log: log}, err
	}
	mem, err := strconv.Atoi(getenv("AWS_LAMBDA_FUNCTION_MEMORY_SIZE"))
	if err != nil {
		return &Function{Log: log}, fmt.Errorf("AWS_LAMBDA_FUNCTION_MEMORY_SIZE=%q: not a whole number of MB: %w",
			getenv("AWS_LAMBDA_FUNCTION_MEMORY_SIZE"), err)
	}
	report := ledger.LambdaReportBytes
	if getenv("CRAWL_SYSTEM_LOG_LEVEL") == "WARN" {
		report = 0 // the stack's default: Lambda writes no START or REPORT line
	}
	return &Function{Handlers: h, Log: log, Telemetry: tel,
		Ledger: &ledger.Ledger{State: h.State, MemoryMB: mem, Logs: logs, ReportBytes: report, Polled: true, Log: log}}, nil
}
