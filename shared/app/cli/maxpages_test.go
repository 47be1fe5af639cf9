package cli

import (
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// skipSite is a site of HTML pages ("/" and "/h/N") that link to other HTML pages, to pages that
// robots.txt disallows ("/private/N") and to text files ("/t/N"), as links says; it counts the HTML
// pages it served.
type skipSite struct {
	mu   sync.Mutex
	html map[string]int
	// links are the links of the HTML page at path p, N for "/h/N" (0 for "/").
	links func(p string, n int) []string
}

func (s *skipSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case p == "/robots.txt":
		fmt.Fprint(w, "User-agent: *\nDisallow: /private/\n")
	case strings.HasPrefix(p, "/t/"):
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "a text file")
	case p == "/" || strings.HasPrefix(p, "/h/"):
		n, _ := strconv.Atoi(strings.TrimPrefix(p, "/h/"))
		s.mu.Lock()
		s.html[p]++
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body>")
		for _, l := range s.links(p, n) {
			fmt.Fprintf(w, `<a href="%s">a link</a> `, l)
		}
		fmt.Fprint(w, "</body></html>")
	default:
		http.NotFound(w, r)
	}
}

// htmlServed are the HTML pages the site served, with how many times each.
func (s *skipSite) htmlServed() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.html)
}

// TestMaxPagesFetchesThatManyPages crawls a site with --max-pages 20 whose URLs skipped (text
// files) give their pages back, and whose links robots.txt disallows parse refuses before they
// take one: so the crawl fetches 20 pages, as
// the flag says, and never more. The skips come early (the home page's links), or after the last
// link was refused over the budget: then crawl run sends links refused over it again. The site's
// count of the HTML pages it served is the oracle; the links left over the budget end with class
// budget.
func TestMaxPagesFetchesThatManyPages(t *testing.T) {
	tests := []struct {
		name  string
		links func(p string, n int) []string
		want  map[string]int64 // the classes; -1: some
		// refused are the links that parse refused for robots.txt: they take no page of the budget.
		refused int64
	}{
		{"skips first", func(p string, n int) []string {
			// 60 HTML pages, each linking to three others; the home page also to three pages
			// that robots.txt disallows and three text files.
			var out []string
			for _, j := range []int{n%59 + 1, (n*7)%59 + 1, (n*13)%59 + 1} {
				out = append(out, fmt.Sprintf("/h/%d", j))
			}
			if p == "/" {
				for j := range 3 {
					out = append(out, fmt.Sprintf("/private/%d", j), fmt.Sprintf("/t/%d", j))
				}
			}
			return out
		}, map[string]int64{"robots": 0, "type": 3, "budget": -1}, 3},
		{"skips last", func(p string, _ int) []string {
			// The home page links first to three text files, then to 30 HTML pages that link
			// nowhere: the text files take pages of the budget, the links after the first 16 HTML
			// pages are refused over it, and the text files give their pages back once no link is
			// left to take them. 33 links: 3 text files, 19 pages fetched, 11 over the budget.
			var out []string
			if p == "/" {
				for j := range 3 {
					out = append(out, fmt.Sprintf("/t/%d", j))
				}
				for j := range 30 {
					out = append(out, fmt.Sprintf("/h/%d", j))
				}
			}
			return out
		}, map[string]int64{"type": 3, "budget": 11}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			site := &skipSite{html: map[string]int{}, links: tt.links}
			srv := httptest.NewServer(site)
			defer srv.Close()
			seeds := writeFile(t, "seeds.txt", srv.URL+"/\n")
			dir := t.TempDir()
			code, stdout, stderr := runBin(t, dir, nil, "run", "--state", "st", "--allow-net", "127.0.0.0/8", "--host-rps", "0",
				"--max-pages", "20", "--json", seeds)
			if code != ExitOK {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			s := lastJSON(t, stdout)
			checkSummaryCountsTheItems(t, filepath.Join(dir, "st"), s)
			served := site.htmlServed()
			if s.Fetched != 20 || len(served) != 20 || s.Pending != 0 {
				t.Errorf("the summary says %d fetched (%d pending) and the site served %d HTML pages; want 20, 0 and 20 with --max-pages 20",
					s.Fetched, s.Pending, len(served))
			}
			for p, n := range served {
				if n != 1 {
					t.Errorf("%s was served %d times", p, n)
				}
			}
			if s.RobotsRefused != tt.refused {
				t.Errorf("links refused by robots.txt: %d, want %d", s.RobotsRefused, tt.refused)
			}
			for class, n := range tt.want {
				if got := s.Classes[class]; got != n && (n != -1 || got == 0) {
					t.Errorf("class %s: %d URLs, want %d (-1: some); all: %v", class, got, n, s.Classes)
				}
			}
		})
	}
}
