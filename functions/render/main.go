// Command render is the render Lambda function: it runs the scripts of the pages that crawls
// with a render section ask for in a headless browser and hands their DOM to parse. It runs from
// a container image that holds Chromium (functions/render/Dockerfile, docs/deploy.md).
// See package renderer, and shared/crawl/web/render for the browser.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/crawlstack/crawlstack/shared/app/awsports"
	"github.com/crawlstack/crawlstack/shared/app/memlimit"
	"github.com/crawlstack/crawlstack/shared/app/pipeline"
	"github.com/crawlstack/crawlstack/shared/crawl/web/render"
	"github.com/crawlstack/crawlstack/shared/observe/telemetry"
)

func main() {
	if _, err := memlimit.Set(os.Getenv); err != nil {
		slog.Error("cannot start: bad configuration", "err", err.Error())
		os.Exit(1)
	}
	// The image's Chromium (CRAWL_CHROMIUM, or chromium on PATH), started by the first page that
	// renders and kept for the container's later invocations. Without one each page to render is
	// parsed from its static HTML, and its record says render/no-browser.
	browser := render.NewOnDemand(render.Options{})
	f, err := awsports.NewRenderFunction(context.Background(), os.Getenv, browser)
	if err != nil {
		f.Log.Error("cannot start: bad configuration", "err", err.Error())
		os.Exit(1)
	}
	lambda.Start(telemetry.Invocation(f.Telemetry, pipeline.Render, f.Ledger.Wrap(f.Render.Handle)))
}
