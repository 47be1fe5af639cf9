package multisite

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestEveryPageIsReachableFromTheRoots walks the web from its roots with a plain client and an
// independent link reader (a regular expression on href): every page of every host is found
// within 5 links of a root (log2 of the 11 pages per host, rounded up, plus a margin), some links
// cross hosts, and the site counts each page fetched once.
func TestEveryPageIsReachableFromTheRoots(t *testing.T) {
	w, err := Start(Options{Hosts: 3, Pages: 31, Links: 5, CrossHost: 0.4, PageBytes: 500})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	href := regexp.MustCompile(`href="([^"]+)"`)
	seen := map[string]bool{}
	depth := map[string]int{}
	queue := append([]string(nil), w.Roots...)
	cross, deepest := 0, 0
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		if seen[u] {
			continue
		}
		seen[u] = true
		deepest = max(deepest, depth[u])
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d", u, resp.StatusCode)
		}
		host := u[:strings.Index(u[len("http://"):], "/")+len("http://")]
		for _, m := range href.FindAllStringSubmatch(string(body), -1) {
			if !strings.HasPrefix(m[1], host+"/") {
				cross++
			}
			if _, ok := depth[m[1]]; !ok {
				depth[m[1]] = depth[u] + 1
			}
			queue = append(queue, m[1])
		}
	}
	if len(seen) != 31 {
		t.Errorf("found %d pages from the roots, want 31", len(seen))
	}
	if cross == 0 {
		t.Error("no link crosses hosts")
	}
	if deepest > 5 {
		t.Errorf("a page is %d links from the roots, want at most 5", deepest)
	}
	if pages, twice := w.Fetched(); pages != 31 || twice != 0 {
		t.Errorf("the web counted %d pages fetched, %d twice; want 31 and 0", pages, twice)
	}
	resp, err := http.Get(w.Roots[0] + "p/999")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("a page past the host's last: %d, want 404", resp.StatusCode)
	}
}

func TestBadOptionsAreRefused(t *testing.T) {
	for _, o := range []Options{{Hosts: 0, Pages: 1, Links: 1}, {Hosts: 255, Pages: 300, Links: 1},
		{Hosts: 3, Pages: 2, Links: 1}, {Hosts: 1, Pages: 1, Links: 0}, {Hosts: 1, Pages: 1, Links: 1, CrossHost: 2}} {
		if w, err := Start(o); err == nil {
			w.Close()
			t.Errorf("Start(%+v) = nil error, want a refusal", o)
		}
	}
}
