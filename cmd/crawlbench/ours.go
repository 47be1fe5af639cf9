package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/crawlstack/crawlstack/shared/app/cli"
)

// crawlOurs runs the real `crawl run` (shared/app/cli) on the embedded backend in o.State: robots.txt,
// dedup and page storage all on, no per-host rate limit and no per-host page budget (it is our own
// site: the default budget of 100,000 pages cut a 100,000-page crawl one page short, since the
// robots-disallowed link counts too), no depth limit.
func crawlOurs(ctx context.Context, o childOptions) (int64, error) {
	seed := filepath.Join(o.State, "seeds.txt")
	if err := os.WriteFile(seed, []byte(o.URL+"\n"), 0o644); err != nil {
		return 0, fmt.Errorf("seed file: %w", err)
	}
	var out, errOut bytes.Buffer
	code := cli.Main(ctx, []string{"run", "--state", filepath.Join(o.State, "run"),
		"--concurrency", strconv.Itoa(o.Concurrency), "--host-rps", "0", "--host-concurrency", "0", "--max-pages-per-host", "0",
		"--allow-net", "127.0.0.0/8", "--max-depth", "-1", "--quiet", "--json", seed}, &out, &errOut)
	if code != cli.ExitOK {
		return 0, fmt.Errorf("crawl run exited %d: %s", code, errOut.String())
	}
	lines := bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n"))
	var sum cli.Summary
	if err := json.Unmarshal(lines[len(lines)-1], &sum); err != nil {
		return 0, fmt.Errorf("crawl run summary: %w", err)
	}
	if !sum.Finished || sum.Failed != 0 || sum.Pending != 0 {
		return sum.Fetched, fmt.Errorf("crawl run did not finish cleanly: %+v", sum)
	}
	return sum.Fetched, nil
}
