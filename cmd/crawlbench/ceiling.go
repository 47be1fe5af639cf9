package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/crawlstack/crawlstack/shared/demo/demosite"
)

// crawlCeiling is the ceiling of any crawler of the site: it knows the site's URL list up front
// (every page, no robots.txt, no links to find) and GETs it with o.Concurrency requests in flight
// on as many kept-alive connections, reading each body and storing nothing.
func crawlCeiling(ctx context.Context, o childOptions) (int64, error) {
	if o.Pages < 1 {
		return 0, errors.New("ceiling: -pages is required")
	}
	root := strings.TrimSuffix(o.URL, "/")
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: o.Concurrency, MaxIdleConnsPerHost: o.Concurrency}}
	defer client.CloseIdleConnections()
	next := make(chan int)
	var fetched atomic.Int64
	errs := make(chan error, o.Concurrency)
	var wg sync.WaitGroup
	for range max(o.Concurrency, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := get(ctx, client, root+demosite.Path(i)); err != nil {
					errs <- err
					return
				}
				fetched.Add(1)
			}
		}()
	}
	var err error
feed:
	for i := range o.Pages {
		select {
		case next <- i:
		case err = <-errs:
			break feed
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(next)
	wg.Wait()
	close(errs)
	if err == nil {
		err = <-errs // nil once closed and empty
	}
	return fetched.Load(), err
}

// get GETs url and reads its body to the end.
func get(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("request %s: %w", url, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("get %s: %w", url, err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return fmt.Errorf("read %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("get %s: status %d", url, resp.StatusCode)
	}
	return nil
}
