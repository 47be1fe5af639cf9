// Package jssite serves, on loopback, a website whose links and content exist only after its
// scripts run: each page's HTML has an empty <main> and <nav>, and an inline script fetches the
// page's JSON (/api/page/N.json) and builds its text and its links from it. A crawl that runs the
// scripts (the render step) finds every page from the root; one that reads the HTML alone finds
// nothing beyond the root. Tests and the render benchmark use it.
package jssite

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options shape a Site. Zero values take the defaults.
type Options struct {
	// Pages is how many pages the site has (default 20). Page 0 is the root, "/".
	Pages int
	// Links is how many pages each page links to (default 3): page i links to pages
	// i*Links+1 ... i*Links+Links that exist, so every page is reachable from the root.
	Links int
	// APIDelay delays each JSON answer, as a distant API would.
	APIDelay time.Duration
}

// Site is a running site. It is safe for concurrent use.
type Site struct {
	srv   *httptest.Server
	pages int
	links int
	delay time.Duration

	mu     sync.Mutex
	hits   map[string]int
	agents map[string]int
}

// New starts a site on 127.0.0.1. Close stops it.
func New(opts Options) *Site {
	s := &Site{pages: max(opts.Pages, 0), links: max(opts.Links, 0), delay: opts.APIDelay,
		hits: map[string]int{}, agents: map[string]int{}}
	if s.pages == 0 {
		s.pages = 20
	}
	if s.links == 0 {
		s.links = 3
	}
	s.srv = httptest.NewServer(s)
	return s
}

// Close stops the site.
func (s *Site) Close() { s.srv.Close() }

// URL is the site's root (page 0), without a trailing slash: "http://127.0.0.1:PORT".
func (s *Site) URL() string { return s.srv.URL }

// Pages is how many pages the site has.
func (s *Site) Pages() int { return s.pages }

// Path is the path of page i: "/" for page 0, "/p/i" for the others.
func Path(i int) string {
	if i == 0 {
		return "/"
	}
	return "/p/" + strconv.Itoa(i)
}

// PageURL is the absolute URL of page i.
func (s *Site) PageURL(i int) string { return s.srv.URL + Path(i) }

// Links are the absolute URLs page i's script adds as <a href> links, in order; none in its HTML.
func (s *Site) Links(i int) []string {
	var out []string
	for _, j := range s.children(i) {
		out = append(out, s.PageURL(j))
	}
	return out
}

// Text is the text page i's script puts into its <main>; its HTML has none of it.
func Text(i int) string { return fmt.Sprintf("jssite page %d, built by its script", i) }

// Hits is how many requests path has had.
func (s *Site) Hits(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

// UserAgents are the distinct User-Agent headers the site has seen, sorted.
func (s *Site) UserAgents() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for ua := range s.agents {
		out = append(out, ua)
	}
	slices.Sort(out)
	return out
}

func (s *Site) children(i int) []int {
	var out []int
	for j := i*s.links + 1; j <= i*s.links+s.links && j < s.pages; j++ {
		out = append(out, j)
	}
	return out
}

// ServeHTTP serves robots.txt (everything allowed), the pages, their JSON, and 404 for the rest.
func (s *Site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.hits[r.URL.Path]++
	s.agents[r.UserAgent()]++
	s.mu.Unlock()
	switch p := r.URL.Path; {
	case p == "/robots.txt":
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "User-agent: *\nAllow: /\n")
	case p == "/":
		s.page(w, 0)
	case strings.HasPrefix(p, "/p/"):
		if i, ok := s.index(strings.TrimPrefix(p, "/p/")); ok && i > 0 {
			s.page(w, i)
			return
		}
		http.NotFound(w, r)
	case strings.HasPrefix(p, "/api/page/") && strings.HasSuffix(p, ".json"):
		i, ok := s.index(strings.TrimSuffix(strings.TrimPrefix(p, "/api/page/"), ".json"))
		if !ok {
			http.NotFound(w, r)
			return
		}
		s.api(w, r, i)
	default:
		http.NotFound(w, r)
	}
}

func (s *Site) index(raw string) (int, bool) {
	i, err := strconv.Atoi(raw)
	return i, err == nil && i >= 0 && i < s.pages && strconv.Itoa(i) == raw
}

func (s *Site) page(w http.ResponseWriter, i int) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(s.HTML(i))
}

// HTML is the body the site serves for page i (what a fetch stores): no link and no text of its
// own; its inline script adds both (the API's path is built at run time, so no URL of the site
// appears in the HTML at all). Reading it here counts no hit.
func (s *Site) HTML(i int) []byte {
	return fmt.Appendf(nil, `<!DOCTYPE html>
<html><head><title>jssite %d</title></head>
<body data-page="%d"><main id="content"></main><nav id="links"></nav>
<script>
fetch(["", "api", "page", document.body.dataset.page + ".json"].join("/"))
  .then(function (r) { return r.json(); })
  .then(function (d) {
    document.getElementById("content").textContent = d.text;
    var nav = document.getElementById("links");
    d.links.forEach(function (h) {
      var a = document.createElement("a"); a.href = h; a.textContent = h; nav.appendChild(a);
    });
    var done = document.createElement("div"); done.id = "rendered"; document.body.appendChild(done);
  });
</script>
</body></html>
`, i, i)
}

func (s *Site) api(w http.ResponseWriter, r *http.Request, i int) {
	if s.delay > 0 {
		t := time.NewTimer(s.delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		}
	}
	links := []string{}
	for _, j := range s.children(i) {
		links = append(links, Path(j))
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"text": Text(i), "links": links})
}
