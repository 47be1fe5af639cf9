package e2etest

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/demosite"
)

// Site is a generated demo site served on 127.0.0.1 for one test. It records when each page
// request (robots.txt aside) arrived, for the politeness checks.
type Site struct {
	*demosite.Site
	// URL is the site's root, with its trailing slash: the crawl's default seed.
	URL string

	mu    sync.Mutex
	times []time.Time
}

// NewSite serves a site of pages pages with links links each until the test ends.
func NewSite(t testing.TB, pages, links int) *Site {
	t.Helper()
	s := &Site{Site: demosite.New(pages, links, 2000)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/robots.txt" {
			s.mu.Lock()
			s.times = append(s.times, time.Now())
			s.mu.Unlock()
		}
		s.Site.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL + "/"
	return s
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
