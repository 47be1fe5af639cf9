// Command fetchslow is the slow lane's Lambda function: the fetch handler (package fetcher) on its
// own queue, for the runs of URLs of polite hosts, which it fetches one after another in their
// politeness slots and waits for in place at less memory than fetch's. What it sends back to
// wait goes to its own queue (FETCHSLOW_QUEUE_URL).
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
	// The memory limit first, as fetch's main sets it.
	if _, err := memlimit.Set(os.Getenv); err != nil {
		slog.Error("cannot start: bad configuration", "err", err.Error())
		os.Exit(1)
	}
	f, err := awsports.NewFunction(context.Background(), os.Getenv, pipeline.FetchSlow, awssecrets.Reader{})
	if err != nil {
		f.Log.Error("cannot start: bad configuration", "err", err.Error())
		os.Exit(1)
	}
	lambda.Start(telemetry.Invocation(f.Telemetry, pipeline.FetchSlow, f.Ledger.Wrap(f.FetchSlow.Handle)))
}
