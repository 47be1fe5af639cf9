package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/crawlstack/crawlstack/shared/ops/crawlindex"
)

// index is `crawl index CRAWL`: the crawl's CDXJ index, built from its WARC files and stored at
// indexes/CRAWL.cdxj (and written to -o FILE as well, if given).
func index(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var out string
	o, rest, err := adminFlags("index", "[-o FILE] CRAWL", args, nil, func(fs *flag.FlagSet) {
		fs.StringVar(&out, "o", "", "also write the index to FILE")
	})
	if err != nil {
		return usageError(stdout, stderr, "index", err)
	}
	if len(rest) != 1 {
		fmt.Fprintf(stderr, "crawl index: want exactly one CRAWL (crawl status lists them), got %d arguments\n", len(rest))
		return ExitUsage
	}
	be, err := openExisting(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "crawl index: %v\n", err)
		return ExitFailed
	}
	defer be.Close()
	r, err := crawlindex.Build(ctx, be.Blobs, rest[0], func(done, total int) {
		if done == total || done%100 == 0 {
			fmt.Fprintf(stderr, "crawl index: %d of %d WARC files read\n", done, total)
		}
	})
	if err != nil {
		fmt.Fprintf(stderr, "crawl index: %v\n", err)
		return ExitFailed
	}
	if out != "" {
		if err := os.WriteFile(out, r.Index, 0o644); err != nil {
			fmt.Fprintf(stderr, "crawl index: %v\n", err)
			return ExitFailed
		}
	}
	where := r.Key
	if be.Where != nil {
		where = be.Where(r.Key)
	}
	fmt.Fprintf(stdout, "indexed %d pages of %d WARC files: %s\n", r.Lines, r.Files, where)
	return ExitOK
}
