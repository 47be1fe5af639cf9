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
