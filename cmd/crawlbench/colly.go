package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/gocolly/colly/v2"
)

// crawlColly crawls the site with Colly set up for speed as its documentation allows: Async with
// Parallelism o.Concurrency on the host, its own http.Transport keeping o.Concurrency idle
// connections to the host (Go's default keeps 2, so most requests opened a new connection), no
// cookie handling, URL revisits off (its default), robots.txt honoured as by ours (Colly ignores
// it by default), its default in-memory visited store, every <a href> followed within the host.
func crawlColly(ctx context.Context, o childOptions) (int64, error) {
	u, err := url.Parse(o.URL)
	if err != nil {
		return 0, fmt.Errorf("site url: %w", err)
	}
	c := colly.NewCollector(colly.Async(true), colly.AllowedDomains(u.Hostname()), colly.StdlibContext(ctx))
	c.IgnoreRobotsTxt = false
	c.DisableCookies()
	c.WithTransport(&http.Transport{MaxIdleConns: o.Concurrency,
		MaxIdleConnsPerHost: o.Concurrency, IdleConnTimeout: 90 * time.Second})
	if err := c.Limit(&colly.LimitRule{DomainGlob: "*", Parallelism: o.Concurrency}); err != nil {
		return 0, fmt.Errorf("limit rule: %w", err)
	}
	var pages, failed atomic.Int64
	c.OnResponse(func(*colly.Response) { pages.Add(1) })
	c.OnError(func(r *colly.Response, err error) {
		if r.StatusCode != 404 { // the demo site's nofollow link is a 404; Colly follows it
			failed.Add(1)
		}
	})
	c.OnHTML("a[href]", func(e *colly.HTMLElement) { e.Request.Visit(e.Attr("href")) })
	if err := c.Visit(o.URL); err != nil {
		return 0, fmt.Errorf("visit %s: %w", o.URL, err)
	}
	c.Wait()
	if n := failed.Load(); n > 0 {
		return pages.Load(), fmt.Errorf("%d requests failed", n)
	}
	return pages.Load(), ctx.Err()
}
