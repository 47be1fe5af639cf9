package demosite

import (
	"bytes"
	"fmt"
	"net/http"
	"time"
)

// Pages that change, for the incremental recrawl. With Validators set, each page answers with an
// ETag and a Last-Modified for its version, and 304 Not Modified to a conditional GET that names
// that version (net/http's ServeContent decides, by RFC 9110). Change gives a page a new version,
// with another body; Bare has a page answer without validators, so that only its payload digest
// shows it unchanged.

// versionBase is the Last-Modified of every page's first version; version n is n hours later.
var versionBase = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// Traffic is what the site has answered to page requests (robots.txt and sitemaps aside).
type Traffic struct {
	Requests    int   // page requests
	NotModified int   // of them answered 304
	Bytes       int64 // body bytes sent
}

// Change gives page i (or orphan page i, when orphan is set) a new version: another body, ETag
// and Last-Modified; an orphan's sitemap entry gets the time of the change as its lastmod.
func (s *Site) Change(i int, orphan bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.versions == nil {
		s.versions, s.changedAt = map[string]int{}, map[string]time.Time{}
	}
	p := Path(i)
	if orphan {
		p = OrphanPath(i)
	}
	s.versions[p]++
	s.changedAt[p] = time.Now().UTC()
}

// Bare has page i answer without an ETag or a Last-Modified.
func (s *Site) Bare(i int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bare == nil {
		s.bare = map[string]bool{}
	}
	s.bare[Path(i)] = true
}

// Traffic returns what the site has answered to page requests since it started or ResetTraffic.
func (s *Site) Traffic() Traffic {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.traffic
}

// ResetTraffic zeroes Traffic and the request counts (Hits, Repeats, Fetched): for a second crawl.
func (s *Site) ResetTraffic() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.traffic = Traffic{}
	s.hits = map[string]int{}
}

// version is the version of the page at path p, and whether it answers without validators.
func (s *Site) version(p string) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.versions[p], s.bare[p]
}

// orphanLastmod is the lastmod the sitemaps give orphan page i: the time of its last change, or a
// date in November 2026.
func (s *Site) orphanLastmod(i int) string {
	s.mu.Lock()
	at, ok := s.changedAt[OrphanPath(i)]
	s.mu.Unlock()
	if ok {
		return at.Format(time.RFC3339)
	}
	return fmt.Sprintf("2026-11-%02dT10:00:00Z", 1+i%28)
}

// servePage writes a page's body, of its version: with Validators, through ServeContent, which
// answers a conditional GET for the same version with 304.
func (s *Site) servePage(w http.ResponseWriter, r *http.Request, body []byte) {
	v, bare := s.version(r.URL.Path)
	if v > 0 {
		body = append(body, fmt.Sprintf("<!-- version %d -->\n", v)...)
	}
	cw := &countingWriter{ResponseWriter: w}
	if s.Validators && !bare {
		w.Header().Set("ETag", fmt.Sprintf(`"v%d:%s"`, v, r.URL.Path))
		http.ServeContent(cw, r, "", versionBase.Add(time.Duration(v)*time.Hour), bytes.NewReader(body))
	} else {
		cw.Write(body)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.traffic.Requests++
	s.traffic.Bytes += cw.n
	if cw.status == http.StatusNotModified {
		s.traffic.NotModified++
	}
}

// countingWriter counts the body bytes written, and keeps the status.
type countingWriter struct {
	http.ResponseWriter
	n      int64
	status int
}

func (c *countingWriter) WriteHeader(code int) {
	c.status = code
	c.ResponseWriter.WriteHeader(code)
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.ResponseWriter.Write(b)
	c.n += int64(n)
	return n, err
}
