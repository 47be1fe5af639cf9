package e2etest

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/demo/demosite"
)

// Site is a generated demo site served on 127.0.0.1 for one test. It records when each page
// request (robots.txt aside) arrived, for the politeness checks. Pages can be made to answer 503
// a number of times before they answer, and to answer slowly; the 503 answers do not count as
// fetches (Repeats counts the pages served whole more than once).
type Site struct {
	*demosite.Site
	// URL is the site's root, with its trailing slash: the crawl's default seed.
	URL string

	mu          sync.Mutex
	times       []time.Time
	unavailable map[string]int           // path -> 503 answers still to give
	delays      map[string]time.Duration // path -> the wait before the answer
	refused     int                      // 503 answers given
	faults      map[string]Fault         // path -> how it fails, every time
	faultHits   map[string]int           // path -> requests of a failing page
	agents      map[string]int           // "User-Agent|X-Crawl-Spec" of each request -> count
	hostRule    map[string]int           // X-Host-Rule of each request ("": none) -> count
}

// NewSite serves a site of pages pages with links links each until the test ends.
func NewSite(t testing.TB, pages, links int) *Site {
	t.Helper()
	return NewSiteWithOrphans(t, pages, links, 0)
}

// NewSiteWithOrphans is NewSite with orphans pages that only its sitemaps list (demosite.Site.Orphans).
func NewSiteWithOrphans(t testing.TB, pages, links, orphans int) *Site {
	t.Helper()
	ds := demosite.New(pages, links, 2000)
	ds.Orphans = orphans
	s := &Site{Site: ds, unavailable: map[string]int{}, delays: map[string]time.Duration{}, agents: map[string]int{},
		hostRule: map[string]int{}, faults: map[string]Fault{}, faultHits: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL + "/"
	return s
}

func (s *Site) serve(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	s.mu.Lock()
	s.agents[r.UserAgent()+"|"+r.Header.Get("X-Crawl-Spec")]++
	s.hostRule[r.Header.Get(HostRuleHeader)]++
	if p != "/robots.txt" {
		s.times = append(s.times, time.Now())
	}
	delay := s.delays[p]
	fault := s.faults[p]
	if fault != 0 {
		s.faultHits[p]++
	}
	busy := s.unavailable[p] > 0
	if busy {
		s.unavailable[p]--
		s.refused++
	}
	s.mu.Unlock()
	if delay > 0 && !pause(r, delay) { // the site's own latency, not the test's timing
		return
	}
	if busy {
		http.Error(w, "try again", http.StatusServiceUnavailable)
		return
	}
	if fault != 0 {
		fault.serve(w, r)
		return
	}
	s.Site.ServeHTTP(w, r)
}

// Fault is how a bad page fails, every time it is asked for (Site.Bad).
type Fault int

// The faults of a bad page.
const (
	// Dead takes the request and never answers: the client gives up waiting for the headers.
	Dead Fault = iota + 1
	// Trickle answers 200 and sends a byte of its body every TrickleGap, never ending.
	Trickle
	// Always500 answers 500.
	Always500
	// BadRetryAfter answers 429 with a Retry-After that is neither seconds nor a date.
	BadRetryAfter
)

// TrickleGap is how often a Trickle page sends a byte: well inside the client's idle read
// timeout, so that only its rate cuts it off.
const TrickleGap = 2 * time.Second

func (f Fault) serve(w http.ResponseWriter, r *http.Request) {
	switch f {
	case Dead:
		<-r.Context().Done()
	case Trickle:
		w.Header().Set("Content-Type", "text/html")
		for {
			if _, err := w.Write([]byte("x")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			if !pause(r, TrickleGap) { // the site's own pace, not the test's timing
				return
			}
		}
	case Always500:
		http.Error(w, "broken", http.StatusInternalServerError)
	case BadRetryAfter:
		w.Header().Set("Retry-After", "soon")
		http.Error(w, "slow down", http.StatusTooManyRequests)
	}
}

// Bad makes page i fail as f every time it is asked for.
func (s *Site) Bad(i int, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[demosite.Path(i)] = f
}

// BadHits returns how many times the bad page i was asked for.
func (s *Site) BadHits(i int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.faultHits[demosite.Path(i)]
}

// Unavailable makes page i answer 503 the next n times it is asked for.
func (s *Site) Unavailable(i, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unavailable[demosite.Path(i)] = n
}

// Slow makes page i answer after d.
func (s *Site) Slow(i int, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delays[demosite.Path(i)] = d
}

// Refused returns how many 503 answers the site gave.
func (s *Site) Refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// Agents returns how many requests (robots.txt's too) came with each User-Agent and
// X-Crawl-Spec header, as "agent|header".
func (s *Site) Agents() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.agents)
}

// HostRuleHeader is a header that a spec's hosts section sends to one host only.
const HostRuleHeader = "X-Host-Rule"

// HostRuleHeaders returns how many requests (robots.txt's too) came with each value of
// HostRuleHeader ("": without it).
func (s *Site) HostRuleHeaders() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.hostRule)
}

// Times returns when each page request arrived, in order.
func (s *Site) Times() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.times...)
}

// PageURL is the absolute URL of page i, as its record names it.
func (s *Site) PageURL(i int) string {
	return s.URL[:len(s.URL)-1] + demosite.Path(i)
}

// pause waits d before the site answers r, as a distant or slow server would; it returns false
// when the client gave up first.
func pause(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}
