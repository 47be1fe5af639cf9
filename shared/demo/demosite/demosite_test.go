package demosite

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/temoto/robotstxt"
)

func TestEveryPageReachableAndSized(t *testing.T) {
	s := New(50, 5, 2000)
	seen := map[int]bool{0: true}
	queue := []int{0}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		for _, j := range s.Targets(i) {
			if !seen[j] {
				seen[j] = true
				queue = append(queue, j)
			}
		}
	}
	if len(seen) != 50 {
		t.Errorf("%d of 50 pages reachable from /", len(seen))
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/p/7", nil))
	body, _ := io.ReadAll(rec.Body)
	if rec.Code != 200 || len(body) < 2000 || !strings.Contains(string(body), "<title>Demo page 7</title>") {
		t.Errorf("page 7: status %d, %d bytes", rec.Code, len(body))
	}
	for _, p := range []string{"/p/50", "/p/0", "/p/007", "/nope"} {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest("GET", p, nil))
		if rec.Code != 404 {
			t.Errorf("%s: status %d, want 404", p, rec.Code)
		}
	}
	if s.Hits("/p/7") != 1 || s.Fetched() != 1 || len(s.Repeats()) != 0 {
		t.Errorf("hits = %d, fetched = %d, repeats = %v", s.Hits("/p/7"), s.Fetched(), s.Repeats())
	}
}

func TestRobotsTxtAsksForTheCrawlDelay(t *testing.T) {
	tests := []struct {
		name  string
		delay time.Duration
		want  string
	}{
		// The default is the file the site has always served, byte for byte.
		{"none", 0, "User-agent: *\nDisallow: /private/\n"},
		{"fraction", 250 * time.Millisecond, "User-agent: *\nDisallow: /private/\nCrawl-delay: 0.25\n"},
		{"whole seconds", 2 * time.Second, "User-agent: *\nDisallow: /private/\nCrawl-delay: 2\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(3, 1, 100)
			s.CrawlDelay = tt.delay
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, httptest.NewRequest("GET", "/robots.txt", nil))
			if got := rec.Body.String(); rec.Code != 200 || got != tt.want {
				t.Fatalf("robots.txt: status %d, %q; want 200, %q", rec.Code, got, tt.want)
			}
			// A robots.txt parser reads back the delay asked for.
			r, err := robotstxt.FromString(rec.Body.String())
			if err != nil {
				t.Fatal(err)
			}
			if got := r.FindGroup("crawlstack").CrawlDelay; got != tt.delay {
				t.Errorf("a parser reads Crawl-delay %v, want %v", got, tt.delay)
			}
		})
	}
}

// TestLatencyDelaysEveryResponse checks that no response, page or not, comes sooner than the
// site's latency.
func TestLatencyDelaysEveryResponse(t *testing.T) {
	s := New(3, 2, 100)
	s.Latency = 50 * time.Millisecond
	srv := httptest.NewServer(s)
	defer srv.Close()
	for _, path := range []string{"/", "/p/1", "/robots.txt", "/missing"} {
		start := time.Now()
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if took := time.Since(start); took < s.Latency {
			t.Errorf("%s answered after %v, before the latency of %v", path, took, s.Latency)
		}
	}
}
