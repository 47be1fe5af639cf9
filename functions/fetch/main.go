// Command fetch is the fetch Lambda function: it fetches admitted URLs politely and safely and stores them as WARC.
// See package fetcher.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/crawlstack/crawlstack/shared/app/awsports"
	"github.com/crawlstack/crawlstack/shared/app/memlimit"
	"github.com/crawlstack/crawlstack/shared/app/pipeline"
	"github.com/crawlstack/crawlstack/shared/aws/awssecrets"
	"github.com/crawlstack/crawlstack/shared/observe/telemetry"
)

func main() {
	// The memory limit first, before anything is built: the collector works harder near the
	// function's memory instead of letting Lambda kill it.
	if _, err := memlimit.Set(os.Getenv); err != nil {
		slog.Error("cannot start: bad configuration", "err", err.Error())
		os.Exit(1)
	}
	f, err := awsports.NewFunction(context.Background(), os.Getenv, pipeline.Fetch, awssecrets.Reader{})
	if err != nil {
		f.Log.Error("cannot start: bad configuration", "err", err.Error())
		os.Exit(1)
	}
	lambda.Start(telemetry.Invocation(f.Telemetry, pipeline.Fetch, f.Ledger.Wrap(f.Fetch.Handle)))
}
