package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"time"
)

// childOptions are the flags of a child crawl.
type childOptions struct {
	URL         string
	State       string
	Concurrency int
	Pages       int // the site's pages (the ceiling's URL list)
	CPUProfile  string
	MemProfile  string
}

// result is what a child prints as its last line of stdout.
type result struct {
	// Pages is what the crawler says it fetched; the parent checks it against the site's count.
	Pages   int64   `json:"pages"`
	Seconds float64 `json:"seconds"`
}

// crawlFunc crawls the site at o.URL and returns how many pages it fetched.
type crawlFunc func(ctx context.Context, o childOptions) (int64, error)

// childMain parses a child's flags, runs one crawl (profiled when asked) and prints its result.
func childMain(ctx context.Context, name string, args []string, crawl crawlFunc) error {
	var o childOptions
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.StringVar(&o.URL, "url", "", "the site's root URL")
	fs.StringVar(&o.State, "state", "", "state directory (ours only; default: a new temporary directory)")
	fs.IntVar(&o.Concurrency, "concurrency", 32, "fetches in flight")
	fs.IntVar(&o.Pages, "pages", 0, "the site's pages (ceiling only: it GETs each one)")
	fs.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the crawl to this file")
	fs.StringVar(&o.MemProfile, "memprofile", "", "write an allocation profile to this file at the end")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.URL == "" {
		return errors.New(name + ": -url is required")
	}
	if o.State == "" {
		dir, err := os.MkdirTemp("", "crawlbench-")
		if err != nil {
			return fmt.Errorf("state dir: %w", err)
		}
		defer os.RemoveAll(dir)
		o.State = dir
	} else if err := os.MkdirAll(o.State, 0o755); err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	if o.CPUProfile != "" {
		f, err := os.Create(o.CPUProfile)
		if err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	start := time.Now()
	pages, err := crawl(ctx, o)
	secs := time.Since(start).Seconds()
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if o.MemProfile != "" {
		if err := writeHeapProfile(o.MemProfile); err != nil {
			return err
		}
	}
	b, err := json.Marshal(result{Pages: pages, Seconds: secs})
	if err != nil {
		return fmt.Errorf("%s: result: %w", name, err)
	}
	fmt.Printf("%s\n", b)
	return nil
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("mem profile: %w", err)
	}
	defer f.Close()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		return fmt.Errorf("mem profile: %w", err)
	}
	return nil
}
