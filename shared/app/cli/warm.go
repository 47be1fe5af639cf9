package cli

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/crawlstack/crawlstack/shared/app/pipeline"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawl/seeds"
)

// warmRobots starts fetching the robots.txt files of the seeds' first origins, as many as the run
// fetches at once, before the run opens its state, and returns fetch's HTTP side for the pipeline
// to use (nil when it warms nothing). A new state takes 20 to 40 ms to set up before fetch's first
// request (docs/bench-history.md, round eighteen); meanwhile the robots.txt files are on their way, and
// fetch's first check of each host waits for the rest of its fetch only.
//
// Only for a URL list on a new embedded state. A crawl spec may ask for its own User-Agent,
// headers or TLS fingerprint, which its robots.txt requests carry too. And the crawl of a new
// state cannot have ended: a run that finds its crawl ended fetches nothing, robots.txt included.
// An error here warms nothing, and pipeline.New reports it.
func warmRobots(ctx context.Context, o RunOptions, body []byte) *pipeline.Fetching {
	if o.Backend != "embedded" || o.SeedFile == "" || crawlspec.IsSpec(o.SeedFile, body) {
		return nil
	}
	if _, err := os.Stat(filepath.Join(o.State, stateFile)); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	fx, err := pipeline.NewFetching(o.config(Resources{}))
	if err != nil {
		return nil
	}
	fx.WarmRobots(ctx, firstOrigins(body, max(o.Concurrency, 1)))
	return fx
}

// errEnough stops firstOrigins' scan.
var errEnough = errors.New("enough origins")

// firstOrigins returns the first seed URL of each of the first n origins (scheme, host and port:
// one robots.txt each) of a URL list, reading no further than it needs: a list of a million
// seeds is read in full by the run later.
func firstOrigins(body []byte, n int) []string {
	var urls []string
	seen := map[string]bool{}
	_ = seeds.Scan(bytes.NewReader(body), 0, func(s seeds.Seed) error {
		if origin := s.URL.Scheme + "://" + s.URL.Host; !seen[origin] { // a robots.txt each
			seen[origin] = true
			urls = append(urls, s.URL.String())
		}
		if len(urls) >= n {
			return errEnough
		}
		return nil
	}, nil) // a bad line is the run's to report
	return urls
}
