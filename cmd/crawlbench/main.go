// Command crawlbench is `make bench`: it serves generated loopback sites (shared/demo/demosite), some
// with a latency per response, and crawls each with this project's crawler (the real `crawl run`
// on the embedded backend, with robots.txt, dedup and page storage on), with Colly as the peer,
// with a ceiling client that GETs the site's known URL list, and with GNU wget, each in a process
// of its own, so that peak RSS and CPU time are per crawler. It prints pages/s, CPU seconds per
// 1,000 pages, peak RSS, pages fetched twice and the fetches in flight for every run, then the
// medians.
//
// Usage:
//
//	crawlbench [flags]                                the benchmark (the parent)
//	crawlbench ours    -url URL [flags]               one crawl by this project's crawler (a child)
//	crawlbench colly   -url URL [flags]               one crawl by Colly (a child)
//	crawlbench ceiling -url URL -pages N [flags]      GET the site's N pages (a child)
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	args := os.Args[1:]
	var err error
	switch {
	case len(args) > 0 && args[0] == "ours":
		err = childMain(ctx, "ours", args[1:], crawlOurs)
	case len(args) > 0 && args[0] == "colly":
		err = childMain(ctx, "colly", args[1:], crawlColly)
	case len(args) > 0 && args[0] == "ceiling":
		err = childMain(ctx, "ceiling", args[1:], crawlCeiling)
	default:
		err = benchMain(ctx, args)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "crawlbench: %v\n", err)
		os.Exit(1)
	}
}
