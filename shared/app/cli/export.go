package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/ops/export"
)

// exportCmd is `crawl export CRAWL`: the crawl's records in one local file (-o FILE, or stdout),
// as JSON lines or CSV, each page once.
func exportCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var out, format, items string
	var meta, follow bool
	every := 2 * time.Second
	o, rest, err := adminFlags("export", "[--format jsonl|csv] [--items RULE] [-o FILE] CRAWL", args, nil, func(fs *flag.FlagSet) {
		fs.StringVar(&out, "o", "", "write to FILE (default: stdout)")
		fs.StringVar(&items, "items", "", "the items of the spec's item rule RULE, one a row, instead of the pages")
		fs.BoolVar(&follow, "follow", false, "write the records as they land, until the crawl is over (JSON lines)")
		fs.DurationVar(&every, "follow-every", every, "with --follow: how often to look for new records")
		fs.BoolVar(&meta, "meta", false, "keep the records of the sitemaps and robots.txt files the crawl read (left out by default)")
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
	if follow && (f != export.JSONL || items != "") {
		return usageError(stdout, stderr, "export", fmt.Errorf("--follow writes pages as JSON lines: not with --format csv, a .csv file or --items"))
	}
	if follow && every <= 0 {
		return usageError(stdout, stderr, "export", fmt.Errorf("--follow-every %v: want more than 0", every))
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
	write := func(w io.Writer) (export.Result, error) {
		if items != "" {
			return export.WriteItems(ctx, be.Blobs, crawl, items, f, w, progress)
		}
		return export.Write(ctx, be.Blobs, crawl, f, w, progress, export.Options{Meta: meta})
	}
	var res export.Result
	if follow {
		res, err = followExport(ctx, be, crawl, out, stdout, export.Options{Meta: meta}, every)
	} else if out == "" {
		res, err = write(stdout)
	} else {
		res, err = exportToFile(out, write)
	}
	if err != nil {
		fmt.Fprintf(stderr, "crawl export: %v\n", err)
		return ExitFailed
	}
	where := out
	if where == "" {
		where = "stdout"
	}
	what := "pages"
	if items != "" {
		what = "items of " + items
	}
	fmt.Fprintf(stderr, "exported %d %s of %d records files as %s to %s\n", res.Records, what, res.Files, f, where)
	return ExitOK
}

// exportToFile writes the export beside path and renames it into place once it is complete, so
// that a failed or interrupted export leaves no partial file (and an earlier one stays).
func exportToFile(path string, write func(io.Writer) (export.Result, error)) (export.Result, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return export.Result{}, err
	}
	defer os.Remove(tmp.Name()) // after the rename, there is none
	res, err := write(tmp)
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

// followExport is crawl export --follow: the crawl's records as they land, to out (written as it
// goes) or stdout, until the crawl is over: finished, stopped with its end decided, or, on the
// embedded backend, with no crawl run working on it.
func followExport(ctx context.Context, be *Backend, crawl, out string, stdout io.Writer, o export.Options, every time.Duration) (export.Result, error) {
	w := stdout
	if out != "" {
		file, err := os.Create(out)
		if err != nil {
			return export.Result{}, err
		}
		defer file.Close()
		w = file
	}
	st := crawlstate.New(be.Table)
	ended := func(ctx context.Context) (bool, error) {
		c, err := st.CrawlOf(ctx, crawl)
		if err != nil {
			return false, err
		}
		n, err := st.Counters(ctx, crawl)
		if err != nil {
			return false, err
		}
		switch stateNow(be, c, n) {
		case "finished", "interrupted":
			return true, nil
		case "stopped":
			return c.End != "", nil
		}
		return false, nil
	}
	return export.Follow(ctx, be.Blobs, crawl, w, o, every, ended)
}
