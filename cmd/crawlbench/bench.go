package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/crawlstack/crawlstack/shared/demo/demosite"
)

// crawlers are the crawlers the benchmark knows, in the order it runs them.
var crawlers = []string{"ours", "colly", "ceiling", "wget"}

// benchOptions are the flags of the benchmark.
type benchOptions struct {
	Sites                               []siteSpec
	Links, PageBytes, Concurrency, Runs int
	Crawlers                            []string
	ProfileDir                          string
	// Wget is GNU wget's path; empty skips wget. wget crawls the sites without latency only.
	Wget string
	// Timeline prints each run's fetches in flight over its tenths.
	Timeline bool
	// StateRoot holds the state directory of every run of ours, all deleted at the end.
	StateRoot string
}

// sample is one crawl by one crawler, measured from the outside.
type sample struct {
	Crawler   string
	Pages     int     // distinct pages the site served
	Seconds   float64 // the crawl, as the child timed it (wget: as the parent did)
	CPU       float64 // user + system seconds of the child process
	MaxRSSMiB float64 // peak resident set of the child process
	Repeats   int     // pages the site served more than once
	Conns     int     // TCP connections the site accepted
	// Busy and IOWait are the machine's share of all cores' time spent busy, and idle waiting for
	// I/O, during the crawl (site, crawler and anything else), in percent; -1 where unknown.
	Busy, IOWait float64
	Timeline     timeline // the fetches in flight, seen from the site
}

func (s sample) pagesPerSecond() float64 { return float64(s.Pages) / s.Seconds }
func (s sample) cpuPer1000() float64     { return s.CPU / float64(s.Pages) * 1000 }

func benchMain(ctx context.Context, args []string) error {
	o, err := parseBenchFlags(args)
	if err != nil {
		return err
	}
	// Runs keep their state until the last one ends. Deleting a run's thousands of files just
	// before the next run would slow that run's file creation: ext4 without a journal scans past
	// the inodes freed in the last 30 seconds for each new file.
	root, err := os.MkdirTemp("", "crawlbench-")
	if err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	defer os.RemoveAll(root)
	o.StateRoot = root
	fmt.Printf("%d links and about %d bytes a page; concurrency %d; %d runs of %s on each site, interleaved\n",
		o.Links, o.PageBytes, o.Concurrency, o.Runs, strings.Join(o.Crawlers, ", "))
	all, err := runAll(ctx, o)
	if err != nil {
		return err
	}
	printMedians(o, all)
	return nil
}

// parseBenchFlags parses and checks crawlbench's flags, and makes the -profile directory; without
// a -wget path, wget is dropped from the crawlers, with a line that says so.
func parseBenchFlags(args []string) (benchOptions, error) {
	var o benchOptions
	names, sites := "ours,colly,ceiling,wget", "10000,2000,5000@50ms,5000@200ms"
	fs := flag.NewFlagSet("crawlbench", flag.ContinueOnError)
	fs.StringVar(&sites, "sites", sites, "comma-separated sites to crawl, each `PAGES[@LATENCY]` (a Go duration the site waits before each response)")
	fs.IntVar(&o.Links, "links", 20, "links per page")
	fs.IntVar(&o.PageBytes, "page-bytes", 20000, "bytes per page")
	fs.IntVar(&o.Concurrency, "concurrency", 32, "fetches in flight, for each crawler (wget: always one)")
	fs.IntVar(&o.Runs, "runs", 3, "runs of each crawler on each site, interleaved; medians are reported")
	fs.StringVar(&names, "crawlers", names, "comma-separated crawlers to run: "+strings.Join(crawlers, ", "))
	fs.StringVar(&o.Wget, "wget", "", "`path` of GNU wget (empty: wget is skipped); it crawls the sites without latency only")
	fs.BoolVar(&o.Timeline, "timeline", false, "print each run's mean fetches in flight and peak RSS in each tenth of its crawl")
	fs.StringVar(&o.ProfileDir, "profile", "", "write CPU and allocation profiles of every `ours` crawl into this directory")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var err error
	if o.Sites, err = parseSites(sites); err != nil {
		return o, fmt.Errorf("-sites: %w", err)
	}
	o.Crawlers = strings.Split(names, ",")
	for _, c := range o.Crawlers {
		if !slices.Contains(crawlers, c) {
			return o, fmt.Errorf("-crawlers: unknown crawler %q (known: %s)", c, strings.Join(crawlers, ", "))
		}
	}
	if o.Runs < 1 || o.Concurrency < 1 {
		return o, errors.New("-runs and -concurrency must be at least 1")
	}
	if slices.Contains(o.Crawlers, "wget") {
		if o.Wget == "" {
			fmt.Println("wget: skipped (no -wget path; `make bench` installs GNU wget from Debian's packages into .cache/bin)")
			o.Crawlers = slices.DeleteFunc(o.Crawlers, func(c string) bool { return c == "wget" })
		} else if _, err := os.Stat(o.Wget); err != nil {
			return o, fmt.Errorf("-wget: %w", err)
		}
	}
	if o.ProfileDir != "" {
		if err := os.MkdirAll(o.ProfileDir, 0o755); err != nil {
			return o, fmt.Errorf("-profile: %w", err)
		}
	}
	return o, nil
}

// runAll crawls each site with each crawler o.Runs times, interleaved, printing a row for each
// crawl, and returns the samples of each site by crawler.
func runAll(ctx context.Context, o benchOptions) ([]map[string][]sample, error) {
	all := make([]map[string][]sample, len(o.Sites))
	for i, site := range o.Sites {
		fmt.Printf("\n%s\n", site)
		printHeader(os.Stdout)
		all[i] = map[string][]sample{}
		for run := 1; run <= o.Runs; run++ {
			for _, c := range o.Crawlers {
				if c == "wget" && site.Latency > 0 {
					continue // one connection: 2,000 pages at 50 ms are 100 s
				}
				s, err := crawlOnce(ctx, o, c, site, i, run)
				if err != nil {
					return nil, fmt.Errorf("%s, %s, run %d: %w", c, site, run, err)
				}
				all[i][c] = append(all[i][c], s)
				printRow(os.Stdout, fmt.Sprintf("%s #%d", c, run), s)
				if o.Timeline {
					printTimeline(os.Stdout, s.Timeline)
				}
			}
		}
	}
	return all, nil
}

// printMedians prints the medians of each crawler's runs on each site, then ours' against the others'.
func printMedians(o benchOptions, all []map[string][]sample) {
	fmt.Printf("\nmedians of %d runs:\n", o.Runs)
	for i, site := range o.Sites {
		fmt.Printf("\n%s\n", site)
		printHeader(os.Stdout)
		for _, c := range o.Crawlers {
			if len(all[i][c]) > 0 {
				printRow(os.Stdout, c, medianSample(all[i][c]))
			}
		}
	}
	fmt.Println()
	for i, site := range o.Sites {
		printRatios(os.Stdout, site, all[i])
	}
}

// printRatios prints ours' medians against each other crawler's on one site.
func printRatios(w io.Writer, site siteSpec, samples map[string][]sample) {
	if len(samples["ours"]) == 0 {
		return
	}
	ours := medianSample(samples["ours"])
	var parts []string
	for _, c := range crawlers[1:] {
		if len(samples[c]) == 0 {
			continue
		}
		peer := medianSample(samples[c])
		parts = append(parts, fmt.Sprintf("%s: pages/s %.2fx, CPU per page %.2fx, peak RSS %.2fx", c,
			ours.pagesPerSecond()/peer.pagesPerSecond(), ours.cpuPer1000()/peer.cpuPer1000(), ours.MaxRSSMiB/peer.MaxRSSMiB))
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "%s: ours against %s\n", site, strings.Join(parts, "; "))
	}
}

// crawlOnce serves a fresh site on loopback and crawls it with crawler in a process of its own.
func crawlOnce(ctx context.Context, o benchOptions, crawler string, spec siteSpec, siteIndex, run int) (sample, error) {
	site := demosite.New(spec.Pages, o.Links, o.PageBytes)
	site.Latency = spec.Latency
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return sample{}, fmt.Errorf("listen on loopback: %w", err)
	}
	var conns atomic.Int64
	track := newTracker(site)
	srv := &http.Server{Handler: track, ReadHeaderTimeout: 10 * time.Second,
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				conns.Add(1)
			}
		}}
	go srv.Serve(ln)
	defer srv.Close()
	url := "http://" + ln.Addr().String() + "/"
	cmd, err := command(ctx, o, crawler, url, spec, fmt.Sprintf("%d-%d", siteIndex+1, run))
	if err != nil {
		return sample{}, err
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if crawler == "wget" {
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard // -nv would print a line a page
	}
	// The earlier runs' files are written back now, not while this one crawls: the kernel writes
	// dirty pages back some 30 s after they were written, and a crawler's file syncs wait behind
	// that writeback (docs/bench-history.md, round twelve).
	syscall.Sync()
	before, known := readCPUTimes()
	track.restart()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return sample{}, fmt.Errorf("child: %w", err)
	}
	rss := sampleRSS(cmd.Process.Pid, rssInterval)
	err = cmd.Wait()
	wall := time.Since(start)
	rssSlices := rss.Stop()
	if err != nil && !(crawler == "wget" && wgetOK(err)) {
		return sample{}, fmt.Errorf("child: %w", err)
	}
	busy, iowait := -1.0, -1.0
	if after, ok := readCPUTimes(); known && ok {
		busy, iowait = shares(before, after)
	}
	r := result{Pages: int64(site.Fetched()), Seconds: wall.Seconds()}
	if crawler != "wget" {
		if r, err = lastResult(out.Bytes()); err != nil {
			return sample{}, err
		}
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return sample{}, errors.New("no resource usage for the child")
	}
	s := sample{Crawler: crawler, Pages: site.Fetched(), Seconds: r.Seconds,
		CPU:       time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds(),
		MaxRSSMiB: float64(ru.Maxrss) / 1024, // Linux reports KiB
		Repeats:   len(site.Repeats()), Conns: int(conns.Load()), Busy: busy, IOWait: iowait,
		Timeline: track.timeline(wall, concurrencyOf(crawler, o))}
	s.Timeline.RSS = rssSlices
	if s.Pages != spec.Pages || r.Pages < int64(spec.Pages) {
		return s, fmt.Errorf("the site served %d of its %d pages (the crawler counted %d)", s.Pages, spec.Pages, r.Pages)
	}
	return s, nil
}

// rssInterval is how often the child's resident set is sampled.
const rssInterval = 250 * time.Millisecond

// concurrencyOf is the fetches crawler keeps in flight at most.
func concurrencyOf(crawler string, o benchOptions) int {
	if crawler == "wget" {
		return 1
	}
	return o.Concurrency
}

// command is the process that crawls the site at url: this program as a child, or wget. name
// tells one run's files from another's.
func command(ctx context.Context, o benchOptions, crawler, url string, spec siteSpec, name string) (*exec.Cmd, error) {
	if crawler == "wget" {
		dir := filepath.Join(o.StateRoot, "wget-"+name)
		return exec.CommandContext(ctx, o.Wget, wgetArgs(url, dir)...), nil
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find this program: %w", err)
	}
	args := []string{crawler, "-url", url, "-concurrency", strconv.Itoa(o.Concurrency), "-pages", strconv.Itoa(spec.Pages)}
	if crawler == "ours" {
		args = append(args, "-state", filepath.Join(o.StateRoot, "ours-"+name))
	}
	if o.ProfileDir != "" && crawler == "ours" {
		base := filepath.Join(o.ProfileDir, "ours-"+name)
		args = append(args, "-cpuprofile", base+".cpu.pprof", "-memprofile", base+".allocs.pprof")
	}
	return exec.CommandContext(ctx, self, args...), nil
}

func lastResult(out []byte) (result, error) {
	var r result
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	if err := json.Unmarshal(lines[len(lines)-1], &r); err != nil {
		return r, fmt.Errorf("child result %q: %w", lines[len(lines)-1], err)
	}
	return r, nil
}

func printHeader(w io.Writer) {
	fmt.Fprintf(w, "%-10s %7s %8s %8s %15s %13s %8s %8s %7s %7s %9s %7s %7s\n", "crawler", "pages", "seconds", "pages/s", "CPU s/1k pages",
		"peak RSS MiB", "repeats", "conns", "busy %", "I/O %", "in flight", "first s", "tail s")
}

func printRow(w io.Writer, name string, s sample) {
	fmt.Fprintf(w, "%-10s %7d %8.2f %8.0f %15.3f %13.1f %8d %8d %7s %7s %9.1f %7.2f %7.2f\n", name, s.Pages, s.Seconds, s.pagesPerSecond(),
		s.cpuPer1000(), s.MaxRSSMiB, s.Repeats, s.Conns, percent(s.Busy), percent(s.IOWait), s.Timeline.InFlight,
		s.Timeline.First, s.Timeline.Tail)
}

// printTimeline prints a run's mean fetches in flight in each tenth of its crawl, and its
// highest resident set in each tenth of its run.
func printTimeline(w io.Writer, tl timeline) {
	fmt.Fprintf(w, "           in flight by tenths: %s; at the concurrency %.0f%% of the time\n", tenths(tl.Slices, 1), tl.Full)
	fmt.Fprintf(w, "           peak RSS MiB by tenths: %s\n", tenths(tl.RSS, 0))
}

// tenths formats a value per tenth of a run, "-" for a tenth with none.
func tenths(xs [timelineSlices]float64, prec int) string {
	parts := make([]string, len(xs))
	for i, v := range xs {
		parts[i] = "-"
		if v > 0 {
			parts[i] = strconv.FormatFloat(v, 'f', prec, 64)
		}
	}
	return strings.Join(parts, " ")
}

// percent prints a share, or "-" where it is unknown.
func percent(p float64) string {
	if p < 0 {
		return "-"
	}
	return strconv.FormatFloat(p, 'f', 0, 64)
}
