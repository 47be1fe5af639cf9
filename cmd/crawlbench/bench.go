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
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/crawlstack/crawlstack/shared/demosite"
)

// benchOptions are the flags of the benchmark.
type benchOptions struct {
	Pages, SmallPages, Links, PageBytes, Concurrency, Runs int
	Crawlers                                               []string
	ProfileDir                                             string
	// StateRoot holds the state directory of every run of ours, all deleted at the end.
	StateRoot string
}

// sample is one crawl by one crawler, measured from the outside.
type sample struct {
	Crawler   string
	Pages     int     // distinct pages the site served
	Seconds   float64 // the crawl, as the child timed it
	CPU       float64 // user + system seconds of the child process
	MaxRSSMiB float64 // peak resident set of the child process
	Repeats   int     // pages the site served more than once
	Conns     int     // TCP connections the site accepted
	// Busy and IOWait are the machine's share of all cores' time spent busy, and idle waiting for
	// I/O, during the crawl (site, crawler and anything else), in percent; -1 where unknown.
	Busy, IOWait float64
}

func (s sample) pagesPerSecond() float64 { return float64(s.Pages) / s.Seconds }
func (s sample) cpuPer1000() float64     { return s.CPU / float64(s.Pages) * 1000 }

func benchMain(ctx context.Context, args []string) error {
	var o benchOptions
	crawlers := "ours,colly"
	fs := flag.NewFlagSet("crawlbench", flag.ContinueOnError)
	fs.IntVar(&o.Pages, "pages", 10000, "pages of the generated site")
	fs.IntVar(&o.SmallPages, "small-pages", 2000, "pages of the second, smaller site that shows whether RSS grows with pages (0: skip)")
	fs.IntVar(&o.Links, "links", 20, "links per page")
	fs.IntVar(&o.PageBytes, "page-bytes", 20000, "bytes per page")
	fs.IntVar(&o.Concurrency, "concurrency", 32, "fetches in flight, for each crawler")
	fs.IntVar(&o.Runs, "runs", 3, "runs of each crawler at each size; medians are reported")
	fs.StringVar(&crawlers, "crawlers", crawlers, "comma-separated crawlers to run: ours, colly")
	fs.StringVar(&o.ProfileDir, "profile", "", "write CPU and allocation profiles of every `ours` crawl into this directory")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.Crawlers = strings.Split(crawlers, ",")
	for _, c := range o.Crawlers {
		if c != "ours" && c != "colly" {
			return fmt.Errorf("-crawlers: unknown crawler %q", c)
		}
	}
	if o.Runs < 1 || o.Pages < 1 {
		return errors.New("-runs and -pages must be at least 1")
	}
	if o.ProfileDir != "" {
		if err := os.MkdirAll(o.ProfileDir, 0o755); err != nil {
			return fmt.Errorf("-profile: %w", err)
		}
	}
	sizes := []int{o.Pages}
	if o.SmallPages > 0 && o.SmallPages != o.Pages {
		sizes = append(sizes, o.SmallPages)
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
	fmt.Printf("site: %v pages, %d links and about %d bytes each; concurrency %d; %d runs\n\n",
		sizes, o.Links, o.PageBytes, o.Concurrency, o.Runs)
	all := map[int]map[string][]sample{}
	printHeader(os.Stdout)
	for _, pages := range sizes {
		all[pages] = map[string][]sample{}
		for run := 1; run <= o.Runs; run++ {
			for _, c := range o.Crawlers {
				s, err := crawlOnce(ctx, o, c, pages, run)
				if err != nil {
					return fmt.Errorf("%s, %d pages, run %d: %w", c, pages, run, err)
				}
				all[pages][c] = append(all[pages][c], s)
				printRow(os.Stdout, fmt.Sprintf("%s #%d", c, run), s)
			}
		}
	}
	fmt.Printf("\nmedians of %d runs:\n", o.Runs)
	printHeader(os.Stdout)
	for _, pages := range sizes {
		for _, c := range o.Crawlers {
			printRow(os.Stdout, c, medianSample(all[pages][c]))
		}
	}
	if len(o.Crawlers) == 2 {
		fmt.Println()
		for _, pages := range sizes {
			ours, peer := medianSample(all[pages]["ours"]), medianSample(all[pages]["colly"])
			fmt.Printf("%d pages: ours/colly pages/s %.2fx, CPU per page %.2fx, peak RSS %.2fx\n", pages,
				ours.pagesPerSecond()/peer.pagesPerSecond(), ours.cpuPer1000()/peer.cpuPer1000(), ours.MaxRSSMiB/peer.MaxRSSMiB)
		}
	}
	return nil
}

// crawlOnce serves a fresh site on loopback and crawls it with crawler in a child process.
func crawlOnce(ctx context.Context, o benchOptions, crawler string, pages, run int) (sample, error) {
	site := demosite.New(pages, o.Links, o.PageBytes)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return sample{}, fmt.Errorf("listen on loopback: %w", err)
	}
	var conns atomic.Int64
	srv := &http.Server{Handler: site, ReadHeaderTimeout: 10 * time.Second,
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				conns.Add(1)
			}
		}}
	go srv.Serve(ln)
	defer srv.Close()

	self, err := os.Executable()
	if err != nil {
		return sample{}, fmt.Errorf("find this program: %w", err)
	}
	args := []string{crawler, "-url", "http://" + ln.Addr().String() + "/", "-concurrency", strconv.Itoa(o.Concurrency)}
	if crawler == "ours" {
		args = append(args, "-state", filepath.Join(o.StateRoot, fmt.Sprintf("ours-%d-%d", pages, run)))
	}
	if o.ProfileDir != "" && crawler == "ours" {
		base := filepath.Join(o.ProfileDir, fmt.Sprintf("ours-%d-%d", pages, run))
		args = append(args, "-cpuprofile", base+".cpu.pprof", "-memprofile", base+".allocs.pprof")
	}
	cmd := exec.CommandContext(ctx, self, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	before, known := readCPUTimes()
	if err := cmd.Run(); err != nil {
		return sample{}, fmt.Errorf("child: %w", err)
	}
	busy, iowait := -1.0, -1.0
	if after, ok := readCPUTimes(); known && ok {
		busy, iowait = shares(before, after)
	}
	r, err := lastResult(out.Bytes())
	if err != nil {
		return sample{}, err
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return sample{}, errors.New("no resource usage for the child")
	}
	s := sample{Crawler: crawler, Pages: site.Fetched(), Seconds: r.Seconds,
		CPU:       time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds(),
		MaxRSSMiB: float64(ru.Maxrss) / 1024, // Linux reports KiB
		Repeats:   len(site.Repeats()), Conns: int(conns.Load()), Busy: busy, IOWait: iowait}
	if s.Pages != pages || r.Pages < int64(pages) {
		return s, fmt.Errorf("the site served %d of its %d pages (the crawler counted %d)", s.Pages, pages, r.Pages)
	}
	return s, nil
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
	fmt.Fprintf(w, "%-10s %7s %8s %8s %15s %13s %8s %8s %7s %7s\n", "crawler", "pages", "seconds", "pages/s", "CPU s/1k pages",
		"peak RSS MiB", "repeats", "conns", "busy %", "I/O %")
}

func printRow(w io.Writer, name string, s sample) {
	fmt.Fprintf(w, "%-10s %7d %8.2f %8.0f %15.3f %13.1f %8d %8d %7s %7s\n", name, s.Pages, s.Seconds, s.pagesPerSecond(),
		s.cpuPer1000(), s.MaxRSSMiB, s.Repeats, s.Conns, percent(s.Busy), percent(s.IOWait))
}

// percent prints a share, or "-" where it is unknown.
func percent(p float64) string {
	if p < 0 {
		return "-"
	}
	return strconv.FormatFloat(p, 'f', 0, 64)
}
