package cli

import (
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// skipSite is a site of 60 HTML pages whose home page also links to pages that robots.txt
// disallows and to text files (skipped as robots and type); it counts the HTML pages it served.
type skipSite struct {
	mu   sync.Mutex
	html map[string]int
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
		i, _ := strconv.Atoi(strings.TrimPrefix(p, "/h/"))
		s.mu.Lock()
		s.html[p]++
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body>")
		for _, j := range []int{i%59 + 1, (i*7)%59 + 1, (i*13)%59 + 1} {
			fmt.Fprintf(w, `<a href="/h/%d">page</a> `, j)
		}
		if p == "/" {
			for j := range 3 {
				fmt.Fprintf(w, `<a href="/private/%d">private</a> <a href="/t/%d">text</a> `, j, j)
			}
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

// TestMaxPagesFetchesThatManyPages crawls a site whose home page links to three pages that
// robots.txt disallows and three text files, with --max-pages 20: the six URLs skipped give their
// pages back, so the crawl fetches 20 pages, as the flag says, and never more. The site's count of
// the HTML pages it served is the oracle; the links over the budget end with class budget.
func TestMaxPagesFetchesThatManyPages(t *testing.T) {
	site := &skipSite{html: map[string]int{}}
	srv := httptest.NewServer(site)
	defer srv.Close()
	seeds := writeFile(t, "seeds.txt", srv.URL+"/\n")
	code, stdout, stderr := runBin(t, "", nil, "run", "--state", "st", "--allow-net", "127.0.0.0/8", "--host-rps", "0",
		"--max-pages", "20", "--json", seeds)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	s := lastJSON(t, stdout)
	served := site.htmlServed()
	if s.Fetched != 20 || len(served) != 20 {
		t.Errorf("the summary says %d fetched and the site served %d HTML pages; want 20 and 20 with --max-pages 20", s.Fetched, len(served))
	}
	for p, n := range served {
		if n != 1 {
			t.Errorf("%s was served %d times", p, n)
		}
	}
	if s.Classes["robots"] != 3 || s.Classes["type"] != 3 || s.Classes["budget"] == 0 {
		t.Errorf("classes %v: want the 3 disallowed pages as robots, the 3 text files as type, and the links over the budget as budget", s.Classes)
	}
}

// lateSkipSite is a site whose home page links first to three text files, then to 30 HTML pages
// that link nowhere: with --max-pages 20 the text files take pages of the budget, the links after
// the first 16 HTML pages are refused over it, and the text files give their pages back only once
// there is no link left to take them. It counts the HTML pages it served.
type lateSkipSite struct{ skipSite }

func (s *lateSkipSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, "/t/"):
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "a text file")
	case p == "/" || strings.HasPrefix(p, "/h/"):
		s.mu.Lock()
		s.html[p]++
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body>")
		if p == "/" {
			for j := range 3 {
				fmt.Fprintf(w, `<a href="/t/%d">text</a> `, j)
			}
			for j := range 30 {
				fmt.Fprintf(w, `<a href="/h/%d">page</a> `, j)
			}
		}
		fmt.Fprint(w, "</body></html>")
	default:
		http.NotFound(w, r)
	}
}

// TestMaxPagesFetchesThatManyPagesWhenTheSkipsComeLast: the pages given back after the last link
// was refused go to links refused over the budget, so the crawl still fetches 20 pages.
func TestMaxPagesFetchesThatManyPagesWhenTheSkipsComeLast(t *testing.T) {
	site := &lateSkipSite{skipSite{html: map[string]int{}}}
	srv := httptest.NewServer(site)
	defer srv.Close()
	seeds := writeFile(t, "seeds.txt", srv.URL+"/\n")
	code, stdout, stderr := runBin(t, "", nil, "run", "--state", "st", "--allow-net", "127.0.0.0/8", "--host-rps", "0",
		"--max-pages", "20", "--json", seeds)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	s := lastJSON(t, stdout)
	served := site.htmlServed()
	if s.Fetched != 20 || len(served) != 20 || s.Pending != 0 {
		t.Errorf("the summary says %d fetched (%d pending) and the site served %d HTML pages; want 20, 0 and 20", s.Fetched, s.Pending, len(served))
	}
	// 33 links: 3 text files, the 19 pages fetched besides the home page, and 11 over the budget.
	if s.Classes["type"] != 3 || s.Classes["budget"] != 33-3-19 {
		t.Errorf("counts %+v: want the 3 text files as type, and the %d links left over the budget as budget", s.Counts, 33-3-19)
	}
}
