package main

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/crawlstack/crawlstack/shared/demosite"
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
