// Package demosite serves a generated website for `make run`, the benchmark and the end-to-end
// tests: Pages HTML pages of about PageBytes bytes, each with Links links to other pages, every page
// reachable from "/", plus a robots.txt that disallows /private/ (and asks for a Crawl-delay when
// one is set). It can answer each request after a set latency, as a distant server would. It
// counts the requests for each path, so tests can prove that no page was fetched twice.
package demosite

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Site is a generated website. It is safe for concurrent use.
type Site struct {
	Pages, Links, PageBytes int
	// CrawlDelay, when set, is the Crawl-delay robots.txt asks of every crawler, in seconds with
	// a fraction if need be ("Crawl-delay: 0.25"). Zero leaves robots.txt without one. Set it
	// before the site serves.
	CrawlDelay time.Duration
	// Latency, when set, is how long every response (robots.txt and 404s too) waits before its
	// first byte, as a distant server would. Set it before the site serves.
	Latency time.Duration

	mu   sync.Mutex
	hits map[string]int
}

// New returns a site of pages pages with links links each, padded to about pageBytes bytes.
func New(pages, links, pageBytes int) *Site {
	return &Site{Pages: max(pages, 1), Links: max(links, 1), PageBytes: pageBytes, hits: map[string]int{}}
}

// Path is the path of page i ("/" for page 0).
func Path(i int) string {
	if i == 0 {
		return "/"
	}
	return "/p/" + strconv.Itoa(i)
}

// ServeHTTP serves robots.txt, the pages, and 404 for anything else.
func (s *Site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.hits[r.URL.Path]++
	s.mu.Unlock()
	if s.Latency > 0 {
		t := time.NewTimer(s.Latency)
		select {
		case <-t.C:
		case <-r.Context().Done(): // the client is gone
			t.Stop()
			return
		}
	}
	if r.URL.Path == "/robots.txt" {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, s.robots())
		return
	}
	i, ok := s.page(r.URL.Path)
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(s.render(i))
}

// robots is the site's robots.txt.
func (s *Site) robots() string {
	const rules = "User-agent: *\nDisallow: /private/\n"
	if s.CrawlDelay <= 0 {
		return rules
	}
	return rules + "Crawl-delay: " + strconv.FormatFloat(s.CrawlDelay.Seconds(), 'f', -1, 64) + "\n"
}

func (s *Site) page(p string) (int, bool) {
	if p == "/" {
		return 0, true
	}
	n, err := strconv.Atoi(strings.TrimPrefix(p, "/p/"))
	if err != nil || !strings.HasPrefix(p, "/p/") || n <= 0 || n >= s.Pages || Path(n) != p {
		return 0, false
	}
	return n, true
}

// Targets returns the pages page i links to: the next page (so all are reachable), then
// pseudo-random others.
func (s *Site) Targets(i int) []int {
	out := []int{(i + 1) % s.Pages}
	for j := 1; j < s.Links; j++ {
		out = append(out, (i*7919+j*104729+j*j*31)%s.Pages)
	}
	return out
}

func (s *Site) render(i int) []byte {
	var b strings.Builder
	b.Grow(s.PageBytes + 512)
	fmt.Fprintf(&b, "<!doctype html><html><head><meta charset=\"utf-8\"><title>Demo page %d</title></head><body>\n", i)
	fmt.Fprintf(&b, "<h1>Demo page %d</h1>\n<ul>\n", i)
	for _, t := range s.Targets(i) {
		fmt.Fprintf(&b, "<li><a href=\"%s\">page %d</a></li>\n", Path(t), t)
	}
	if i == 0 {
		b.WriteString("<li><a href=\"/private/secret\">private (disallowed by robots.txt)</a></li>\n")
		b.WriteString("<li><a rel=\"nofollow\" href=\"/p/nofollow-never-fetched\">nofollow</a></li>\n")
	}
	b.WriteString("</ul>\n")
	for b.Len() < s.PageBytes {
		b.WriteString("<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore.</p>\n")
	}
	b.WriteString("</body></html>\n")
	return []byte(b.String())
}

// Hits returns how many times path was requested.
func (s *Site) Hits(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

// Repeats returns the paths requested more than once (robots.txt aside).
func (s *Site) Repeats() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for p, n := range s.hits {
		if n > 1 && p != "/robots.txt" {
			out[p] = n
		}
	}
	return out
}

// Fetched returns how many distinct pages were requested.
func (s *Site) Fetched() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for p := range s.hits {
		if _, ok := s.page(p); ok {
			n++
		}
	}
	return n
}
