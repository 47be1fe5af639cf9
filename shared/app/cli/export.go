package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/ops/export"
)

// exportCmd is `crawl export CRAWL`: the crawl's records in one local file (-o FILE, or stdout),
// as JSON lines or CSV, each page once.
func exportCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var out, format string
	o, rest, err := adminFlags("export", "[--format jsonl|csv] [-o FILE] CRAWL", args, nil, func(fs *flag.FlagSet) {
		fs.StringVar(&out, "o", "", "write to FILE (default: stdout)")
		fs.StringVar(&format, "format", "", "jsonl or csv (default: csv for a FILE named .csv, jsonl otherwise)")
	})
	if err != nil {
		return usageError(stdout, stderr, "export", err)
	}
	if len(rest) > 1 {
		fmt.Fprintf(stderr, "crawl export: want one CRAWL (or latest, or none when there is one; %s lists them), got %d arguments\n", hintsOf(o).cmd("list"), len(rest))
		return ExitUsage
	}
	f := export.FormatOf(out)
	if format != "" {
		if f, err = export.ParseFormat(format); err != nil {
			return usageError(stdout, stderr, "export", fmt.Errorf("--format: %w", err))
		}
	}
	be, err := openExisting(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "crawl export: %v\n", err)
		return ExitFailed
	}
	defer be.Close()
	crawl, err := pickCrawl(ctx, crawlstate.New(be.Table), rest, hintsOf(o))
	if err != nil {
		fmt.Fprintf(stderr, "crawl export: %v\n", err)
		return ExitFailed
	}
	progress := func(done, total int) {
		if done == total || done%100 == 0 {
			fmt.Fprintf(stderr, "crawl export: %d of %d records files read\n", done, total)
		}
	}
	var res export.Result
	if out == "" {
		res, err = export.Write(ctx, be.Blobs, crawl, f, stdout, progress)
	} else {
		res, err = exportToFile(ctx, be, crawl, f, out, progress)
	}
	if err != nil {
		fmt.Fprintf(stderr, "crawl export: %v\n", err)
		return ExitFailed
	}
	where := out
	if where == "" {
		where = "stdout"
	}
	fmt.Fprintf(stderr, "exported %d pages of %d records files as %s to %s\n", res.Records, res.Files, f, where)
	return ExitOK
}

// exportToFile writes the export beside path and renames it into place once it is complete, so
// that a failed or interrupted export leaves no partial file (and an earlier one stays).
func exportToFile(ctx context.Context, be *Backend, crawl string, f export.Format, path string, progress func(int, int)) (export.Result, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return export.Result{}, err
	}
	defer os.Remove(tmp.Name()) // after the rename, there is none
	res, err := export.Write(ctx, be.Blobs, crawl, f, tmp, progress)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return res, err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return res, err
	}
	return res, os.Rename(tmp.Name(), path)
}
