// Command crawlcost meters what crawls cost on AWS: a realistic crawl (1,000 hosts of Zipf sizes,
// real-looking pages, the drain checks on, a table with other crawls' history), a wide crawl of
// 100 equal hosts, and a crawl of one host (-profiles picks them), through the AWS adapters on the
// endpoints the environment names (`make cost` starts the local emulators for it). It prints the
// units per page and the dollars per million pages of each, by item, and -json writes the same to
// a file. It refuses to run against AWS itself.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/crawlstack/crawlstack/shared/bench/costrun"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(costrun.Main(ctx, os.Args[1:], os.Stdout, os.Stderr))
}
