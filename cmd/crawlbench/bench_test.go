package main

import (
	"bufio"
	"context"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/demo/demosite"
)

// benchCrawl crawls a fresh 300-page site with crawl in-process, for profiling:
//
//	go test -run '^$' -bench Ours -cpuprofile cpu.pprof ./cmd/crawlbench
func benchCrawl(b *testing.B, crawl crawlFunc) {
	const pages = 300
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		site := demosite.New(pages, 20, 20000)
		srv := httptest.NewServer(site)
		o := childOptions{URL: srv.URL + "/", State: b.TempDir(), Concurrency: 32}
		b.StartTimer()
		n, err := crawl(context.Background(), o)
		b.StopTimer()
		srv.Close()
		if err != nil || n < pages || site.Fetched() != pages {
			b.Fatalf("crawled %d pages (the site served %d of %d): %v", n, site.Fetched(), pages, err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(pages*b.N)/b.Elapsed().Seconds(), "pages/s")
}

func BenchmarkOurs(b *testing.B)  { benchCrawl(b, crawlOurs) }
func BenchmarkColly(b *testing.B) { benchCrawl(b, crawlColly) }

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestMachineShares(t *testing.T) {
	before, err := parseCPULine("cpu  1000 10 500 8000 100 5 5 0 0 0\n")
	if err != nil {
		t.Fatal(err)
	}
	// 2,000 ticks later: 1,500 busy (user, system, irq), 400 idle, 100 waiting for I/O.
	after, err := parseCPULine("cpu  2200 10 800 8400 200 5 5 0 0 0\n")
	if err != nil {
		t.Fatal(err)
	}
	busy, iowait := shares(before, after)
	if busy != 75 || iowait != 5 {
		t.Errorf("shares = %v%% busy, %v%% I/O wait; want 75 and 5", busy, iowait)
	}
	for _, bad := range []string{"", "cpu0 1 2 3 4 5", "cpu 1 2 x 4 5", "intr 1 2 3 4 5 6"} {
		if _, err := parseCPULine(bad); err == nil {
			t.Errorf("parseCPULine(%q) accepted it", bad)
		}
	}
}

func TestParseSites(t *testing.T) {
	got, err := parseSites("10000, 2000@50ms,500@0,1@1s")
	if err != nil {
		t.Fatal(err)
	}
	want := []siteSpec{{10000, 0}, {2000, 50 * time.Millisecond}, {500, 0}, {1, time.Second}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseSites = %v, want %v", got, want)
	}
	for _, bad := range []string{"", ",", "0", "x", "10@", "10@fast", "10@-1s", "-5@1s"} {
		if _, err := parseSites(bad); err == nil {
			t.Errorf("parseSites(%q) accepted it", bad)
		}
	}
}

// TestTimeline checks the fetches in flight against spans worked out by hand: two requests over
// the first half of a 10 s crawl (0-5 s), one over the second (5-10 s), the child ending at 12 s.
func TestTimeline(t *testing.T) {
	s := time.Second
	tr := &tracker{spans: []span{{0, 5 * s}, {0, 5 * s}, {5 * s, 10 * s}}}
	tl := tr.timeline(12*s, 2)
	want := timeline{First: 0, Tail: 2, InFlight: 1.5, Full: 50, Slices: [timelineSlices]float64{2, 2, 2, 2, 2, 1, 1, 1, 1, 1}}
	if !reflect.DeepEqual(tl, want) {
		t.Errorf("timeline = %+v, want %+v", tl, want)
	}
	// A crawl that starts late: the first request 1 s in, every tenth half full.
	tr = &tracker{spans: []span{{1 * s, 11 * s}}}
	tl = tr.timeline(11*s, 2)
	want = timeline{First: 1, Tail: 0, InFlight: 1, Full: 0, Slices: [timelineSlices]float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}}
	if !reflect.DeepEqual(tl, want) {
		t.Errorf("late timeline = %+v, want %+v", tl, want)
	}
	if tl := (&tracker{}).timeline(s, 2); tl != (timeline{}) {
		t.Errorf("timeline of no request = %+v, want zero", tl)
	}
}

// TestCeilingFetchesEveryPageOnce runs the ceiling client against a site and checks the site's
// own counts: every page once, nothing else.
func TestCeilingFetchesEveryPageOnce(t *testing.T) {
	site := demosite.New(120, 5, 500)
	srv := httptest.NewServer(site)
	defer srv.Close()
	n, err := crawlCeiling(context.Background(), childOptions{URL: srv.URL + "/", Pages: 120, Concurrency: 8})
	if err != nil {
		t.Fatal(err)
	}
	if n != 120 || site.Fetched() != 120 || len(site.Repeats()) != 0 || site.Hits("/robots.txt") != 0 {
		t.Errorf("ceiling counted %d; the site served %d pages, repeats %v", n, site.Fetched(), site.Repeats())
	}
	// A URL list longer than the site ends in an error that names the missing page.
	if _, err := crawlCeiling(context.Background(), childOptions{URL: srv.URL + "/", Pages: 121, Concurrency: 8}); err == nil ||
		!strings.Contains(err.Error(), "/p/120") {
		t.Errorf("ceiling of 121 pages on a 120-page site: %v, want the 404 of /p/120", err)
	}
}

func TestParseRSS(t *testing.T) {
	status := "Name:\tcrawlbench\nVmPeak:\t  900000 kB\nVmRSS:\t   51200 kB\nThreads:\t9\n"
	got, err := parseRSS(bufio.NewScanner(strings.NewReader(status)))
	if err != nil || got != 50 {
		t.Errorf("parseRSS = %v, %v; want 50 MiB", got, err)
	}
	for _, bad := range []string{"", "Name:\tx\n", "VmRSS:\t12 MB\n", "VmRSS:\tlots kB\n"} {
		if _, err := parseRSS(bufio.NewScanner(strings.NewReader(bad))); err == nil {
			t.Errorf("parseRSS(%q) accepted it", bad)
		}
	}
	// This process's own resident set, read from /proc, is a plausible size.
	if mib, err := readRSS(os.Getpid()); err != nil || mib < 1 || mib > 4096 {
		t.Errorf("readRSS(self) = %v MiB, %v", mib, err)
	}
}
