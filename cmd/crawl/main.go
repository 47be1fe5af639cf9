// Command crawl runs the crawler on a laptop: `crawl run SEEDFILE` crawls on the embedded backend
// (no AWS, no Docker) with the same handlers that run in Lambda. See `crawl help`.
package main

import (
	"context"
	"os"

	"github.com/crawlstack/crawlstack/shared/app/cli"
)

func main() {
	os.Exit(cli.Main(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}
