package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/crawlstack/crawlstack/shared/demo/demosite"
)

const usage = `crawl: a serverless web crawler, run locally

usage:
  crawl run [flags] [SEEDFILE] crawl the URLs of SEEDFILE (one per line), or a crawl spec
                               (.yaml, .json: docs/spec.md); run it again to resume; with no
                               SEEDFILE, go on with what the state directory holds
  crawl demo [flags]           serve a generated site on loopback and crawl it
  crawl list [flags]           the crawls with their state, counts and seed file, and the seed
                               files refused (--stack NAME: a deployed stack's)
  crawl status [flags] [CRAWL] a crawl's progress, cost, queues and what it waits for; with no
                               CRAWL, the crawls on record
  crawl pause|resume|stop [flags] CRAWL  pause a crawl (its messages wait), resume it (a stalled
                               crawl's checks too), or stop it for good (its queued URLs end stopped)
  crawl failures [flags] CRAWL the URLs that ended without a page, with class and detail
                               (--class a,b filters; --json or --csv)
  crawl index [flags] CRAWL    build the crawl's CDXJ index from its WARC files
                               (indexes/CRAWL.cdxj; -o FILE writes a copy)
  crawl export [flags] CRAWL   the crawl's records in one file, each page once
                               (--format jsonl|csv, -o FILE; default: stdout)
  crawl try [flags] SPEC URL|FILE  run a spec's extraction (or one --css or --xpath) on one
                               page and print what it yields: try a selector before a crawl
  crawl redrive [flags] QUEUE  move the dead-letter messages of schedule, fetch or parse back
  crawl optout add|remove|list [flags]  the hosts, prefixes, patterns and URLs no crawl admits
  crawl purge [flags] --host H | --url URL  erase a site's or a page's stored data, leave a
                               tombstone and an audit record (--dry-run lists what would go)
  crawl invoke [flags] FN EVENTFILE  run the schedule, fetch or parse handler once on a JSON event
  crawl help [COMMAND]         this text, or a command's flags and examples
  crawl --version              the version and commit this binary was built from

examples:
  crawl demo                                  a first crawl, nothing to set up
  crawl run seeds.txt                         crawl your seeds into ./crawl-state
  crawl run --allow-net 127.0.0.0/8 seeds.txt a site on your own machine
  crawl status                                the crawls in ./crawl-state
  crawl failures CRAWL                        why URLs ended without a page

Run 'crawl COMMAND --help' for a command's flags.
`

// commands are the commands Main knows, for suggestions on a typo.
var commands = []string{"run", "demo", "list", "status", "pause", "resume", "stop", "failures", "index", "export", "try", "redrive", "optout", "purge", "invoke", "help", "version"}

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
		o, err := parseRunFlags("run", args[1:], true)
		if err != nil {
			return usageError(stdout, stderr, "run", err)
		}
		_, code := crawlRun(ctx, o, stdout, stderr)
		return code
	case "demo":
		return demo(ctx, args[1:], stdout, stderr)
	case "redrive":
		return redrive(ctx, args[1:], stdout, stderr)
	case "status":
		return status(ctx, args[1:], stdout, stderr)
	case "list":
		return list(ctx, args[1:], stdout, stderr)
	case "failures":
		return failures(ctx, args[1:], stdout, stderr)
	case "index":
		return index(ctx, args[1:], stdout, stderr)
	case "export":
		return exportCmd(ctx, args[1:], stdout, stderr)
	case "try":
		return try(ctx, args[1:], stdout, stderr)
	case "pause", "resume", "stop":
		return setRun(ctx, args[0], args[1:], stdout, stderr)
	case "invoke":
		return invoke(ctx, args[1:], stdout, stderr)
	case "optout":
		return optoutCmd(ctx, args[1:], stdout, stderr)
	case "purge":
		return purgeCmd(ctx, args[1:], stdout, stderr)
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, version())
		return ExitOK
	case "help", "-h", "--help", "-help":
		if len(args) > 1 && args[1] != "help" && slices.Contains(commands, args[1]) {
			return Main(ctx, []string{args[1], "--help"}, stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return ExitOK
	}
	msg := fmt.Sprintf("crawl: unknown command %q", args[0])
	if s := closest(strings.TrimLeft(args[0], "-"), commands); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
	}
	fmt.Fprintf(stderr, "%s\nRun 'crawl help' for the commands.\n", msg)
	return ExitUsage
}

// demoHelp is the help of `crawl demo`.
var demoHelp = cmdHelp{
	usage: "crawl demo [--pages N] [--links N] [--page-bytes N] [-- RUNFLAGS]",
	about: "Serve a generated site on 127.0.0.1 and crawl it on the embedded backend in .state/demo (afresh each\n" +
		"time): a first crawl with nothing to set up. Flags of crawl run go after \"--\" (crawl run --help).",
	examples: `crawl demo
crawl demo --pages 2000 -- --concurrency 64 --json`,
}

// demo serves a generated site on 127.0.0.1 and crawls it with the run flags (the loopback range
// allowed, and no per-host rate limit: it is our own site).
func demo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
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
	if err := parseFlags(fs, args, demoHelp); err != nil {
		return usageError(stdout, stderr, "demo", err)
	}
	if fs.NArg() > 0 {
		return usageError(stdout, stderr, "demo", fmt.Errorf("unexpected arguments%s (crawl run's flags go after --)", quotedArgs(fs.Args())))
	}
	o, err := parseRunFlags("demo", append([]string{"--state", ".state/demo", "--allow-net", "127.0.0.0/8", "--host-rps", "0",
		"--host-concurrency", "0"}, runArgs...), false)
	if err != nil {
		return usageError(stdout, stderr, "demo", err)
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
		fmt.Fprintf(say, "look at the results:\n  ls %s\n  cat %s/*/*.jsonl | head\n", sum.Records, strings.TrimSuffix(sum.Records, "/"))
	}
	return code
}
