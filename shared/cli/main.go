package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/crawlstack/crawlstack/shared/demosite"
)

const usage = `crawl: a serverless web crawler, run locally

usage:
  crawl run [flags] SEEDFILE   crawl the URLs of SEEDFILE (one per line)
  crawl demo [flags]           serve a generated site on loopback and crawl it
  crawl status [flags] [CRAWL] a crawl's progress, cost, queues and what it waits for; with no
                               CRAWL, the crawls on record
  crawl pause|resume|stop [flags] CRAWL  pause a crawl (its messages wait), resume it, or stop
                               it for good (its queued URLs end stopped)
  crawl failures [flags] CRAWL the URLs that ended without a page, with class and detail
                               (--class a,b filters; --json or --csv)
  crawl redrive [flags] QUEUE  move the dead-letter messages of schedule, fetch or parse back
  crawl invoke [flags] FN EVENTFILE  run the schedule, fetch or parse handler once on a JSON event
  crawl help                   this text

Run "crawl run -h" for the flags.
`

// Main runs the crawl command with args (without the program name) and returns its exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return ExitUsage
	}
	ctx, stop := signalContext(ctx)
	defer stop()
	switch args[0] {
	case "run":
		o, err := parseRunFlags("run", args[1:], stderr, true)
		if err != nil {
			return usageError(stderr, err)
		}
		_, code := crawlRun(ctx, o, stdout, stderr)
		return code
	case "demo":
		return demo(ctx, args[1:], stdout, stderr)
	case "redrive":
		return redrive(ctx, args[1:], stdout, stderr)
	case "status":
		return status(ctx, args[1:], stdout, stderr)
	case "failures":
		return failures(ctx, args[1:], stdout, stderr)
	case "pause", "resume", "stop":
		return setRun(ctx, args[0], args[1:], stdout, stderr)
	case "invoke":
		return invoke(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return ExitOK
	}
	fmt.Fprintf(stderr, "crawl: unknown command %q\n\n%s", args[0], usage)
	return ExitUsage
}

func usageError(stderr io.Writer, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	fmt.Fprintf(stderr, "crawl: %v\n", err)
	return ExitUsage
}

// demo serves a generated site on 127.0.0.1 and crawls it with the run flags (the loopback range
// allowed, and no per-host rate limit: it is our own site).
func demo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pages := fs.Int("pages", 300, "pages of the generated site")
	links := fs.Int("links", 10, "links per page")
	size := fs.Int("page-bytes", 8000, "bytes per page")
	// The rest of the flags are run's; split at "--" or pass known ones through.
	var runArgs []string
	for i, a := range args {
		if a == "--" {
			runArgs = args[i+1:]
			args = args[:i]
			break
		}
	}
	if err := fs.Parse(args); err != nil {
		return usageError(stderr, err)
	}
	o, err := parseRunFlags("demo", append([]string{"--state", ".state/demo", "--allow-net", "127.0.0.0/8", "--host-rps", "0",
		"--host-concurrency", "0"}, runArgs...), stderr, false)
	if err != nil {
		return usageError(stderr, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintf(stderr, "crawl demo: listen on loopback: %v\n", err)
		return ExitFailed
	}
	site := demosite.New(*pages, *links, *size)
	srv := &http.Server{Handler: site}
	go srv.Serve(ln)
	defer srv.Close()
	if err := os.MkdirAll(o.State, 0o755); err != nil {
		fmt.Fprintf(stderr, "crawl demo: %v\n", err)
		return ExitFailed
	}
	// A fresh state per demo: the site's port changes from run to run.
	for _, p := range []string{"state.db", "state.db-wal", "state.db-shm", "blobs"} {
		os.RemoveAll(filepath.Join(o.State, p))
	}
	o.SeedFile = filepath.Join(o.State, "seeds.txt")
	seed := "# the demo site, served by this command\nhttp://" + ln.Addr().String() + "/\n"
	if err := os.WriteFile(o.SeedFile, []byte(seed), 0o644); err != nil {
		fmt.Fprintf(stderr, "crawl demo: %v\n", err)
		return ExitFailed
	}
	// With --json, stdout holds the summary alone: the demo's own lines go to stderr.
	say := stdout
	if o.JSON {
		say = stderr
	}
	fmt.Fprintf(say, "serving a %d-page demo site at http://%s/ and crawling it\n", *pages, ln.Addr())
	sum, code := crawlRun(ctx, o, stdout, stderr)
	if code == ExitOK {
		fmt.Fprintf(say, "\nthe demo site has %d pages; the crawl fetched %d (robots.txt disallows /private/, nofollow links are not followed)\n",
			*pages, sum.Fetched)
		fmt.Fprintf(say, "look at the results:\n  ls %s\n  cat %s/*/*/*/*.jsonl | head\n", sum.Records, strings.TrimSuffix(sum.Records, "/"))
	}
	return code
}
