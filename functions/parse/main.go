// Command parse is the parse Lambda function: it extracts links and metadata from stored pages and writes records.
// See package parser.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/crawlstack/crawlstack/shared/app/awsports"
	"github.com/crawlstack/crawlstack/shared/app/memlimit"
	"github.com/crawlstack/crawlstack/shared/app/pipeline"
	"github.com/crawlstack/crawlstack/shared/observe/telemetry"
)

func main() {
	// The memory limit first, before anything is built: the collector works harder near the
	// function's memory instead of letting Lambda kill it.
	if _, err := memlimit.Set(os.Getenv); err != nil {
		slog.Error("cannot start: bad configuration", "err", err.Error())
		os.Exit(1)
	}
	f, err := awsports.NewFunction(context.Background(), os.Getenv, pipeline.Parse, nil)
	if err != nil {
		f.Log.Error("cannot start: bad configuration", "err", err.Error())
		os.Exit(1)
	}
	lambda.Start(telemetry.Invocation(f.Telemetry, pipeline.Parse, f.Ledger.Wrap(f.Parse.Handle)))
}
