// Command fetch is the fetch Lambda function: it fetches admitted URLs politely and safely and stores them as WARC.
// See package fetcher.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/crawlstack/crawlstack/shared/app/awsports"
	"github.com/crawlstack/crawlstack/shared/app/pipeline"
	"github.com/crawlstack/crawlstack/shared/aws/awssecrets"
	"github.com/crawlstack/crawlstack/shared/observe/telemetry"
)

func main() {
	f, err := awsports.NewFunction(context.Background(), os.Getenv, pipeline.Fetch, awssecrets.Proxies)
	if err != nil {
		f.Log.Error("cannot start: bad configuration", "err", err.Error())
		os.Exit(1)
	}
	lambda.Start(telemetry.Invocation(f.Telemetry, pipeline.Fetch, f.Ledger.Wrap(f.Fetch.Handle)))
}
