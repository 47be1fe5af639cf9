// Command crawlrecrawl measures the incremental recrawl on the local AWS emulators (`make
// recrawl-bench` starts them): a full crawl of the bench's 10,000-page site, then a recrawl after
// one page in ten changed, with their requests, bytes and billed units side by side. It refuses to
// run against AWS itself.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/crawlstack/crawlstack/shared/crawl/cost"

	"github.com/crawlstack/crawlstack/shared/aws/awsconfig"
	"github.com/crawlstack/crawlstack/shared/bench/costrun"
	"github.com/crawlstack/crawlstack/shared/bench/recrawlbench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx))
}

func run(ctx context.Context) int {
	o := recrawlbench.Options{Progress: os.Stderr}
	flag.IntVar(&o.Pages, "pages", 10_000, "pages of the site")
	flag.IntVar(&o.Links, "links", 20, "links per page")
	flag.IntVar(&o.PageBytes, "page-bytes", 20_000, "bytes per page")
	flag.IntVar(&o.Every, "every", 10, "change one page in this many between the crawls")
	flag.IntVar(&o.Concurrency, "concurrency", 32, "records worked on at once, as crawl run's --concurrency")
	flag.Parse()
	if o.Pages < 2 || o.Every < 2 || o.Links < 1 || o.Concurrency < 1 {
		fmt.Fprintln(os.Stderr, "crawlrecrawl: want -pages and -every of 2 or more, -links and -concurrency of 1 or more")
		return 2
	}
	if !costrun.Emulated(os.Getenv) {
		fmt.Fprintln(os.Stderr, "crawlrecrawl: no AWS endpoint set: it runs on the local emulators or LocalStack only (make recrawl-bench)")
		return 2
	}
	cfg, err := awsconfig.Load(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "crawlrecrawl: %v\n", err)
		return 1
	}
	full, again, err := recrawlbench.Run(ctx, o, cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "crawlrecrawl: %v\n", err)
		return 1
	}
	p := cost.DefaultPrices()
	recrawlbench.Print(os.Stdout, o, full, again, p)
	fmt.Fprintf(os.Stdout, "prices: us-east-1 list prices checked %s (docs/cost.md); Lambda at the stack's memory, arm64\n", p.SQSPerMillion.Checked)
	return 0
}
