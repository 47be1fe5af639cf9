package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// longRobots serves a robots.txt longer than a parse message carries (message.MaxRobotsBody),
// with the same rule as skipSite's, and the rest from site.
type longRobots struct{ site http.Handler }

func (l longRobots) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/robots.txt" {
		fmt.Fprint(w, "User-agent: *\nDisallow: /private/\n"+strings.Repeat("# a long comment line of the kind some sites have\n", 400))
		return
	}
	l.site.ServeHTTP(w, r)
}

// TestLinksRobotsTxtRefusesAreNeverAdmitted crawls two sites whose every page links to three pages
// that robots.txt disallows. On the site whose robots.txt travels with its pages to parse, those
// links are refused there: no URL item is written for them (no admission, so no fetch message),
// and the summary counts them as links refused by robots.txt. On the site whose robots.txt is too
// long to travel, they are admitted and skipped by the fetcher with class robots, as before.
func TestLinksRobotsTxtRefusesAreNeverAdmitted(t *testing.T) {
	links := func(p string, n int) []string {
		out := []string{"/private/0", "/private/1", "/private/2"}
		if n < 8 {
			out = append(out, fmt.Sprintf("/h/%d", n+1))
		}
		return out
	}
	short := httptest.NewServer(&skipSite{html: map[string]int{}, links: links})
	defer short.Close()
	long := httptest.NewServer(longRobots{&skipSite{html: map[string]int{}, links: links}})
	defer long.Close()
	seeds := writeFile(t, "seeds.txt", short.URL+"/\n"+long.URL+"/\n")
	dir := t.TempDir()
	code, stdout, stderr := runBin(t, dir, nil, "run", "--state", "st", "--allow-net", "127.0.0.0/8", "--host-rps", "0", "--json", seeds)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	s := lastJSON(t, stdout)
	checkSummaryCountsTheItems(t, filepath.Join(dir, "st"), s)
	if s.Fetched != 18 || s.Pending != 0 {
		t.Errorf("fetched %d, pending %d; want the 18 pages, 0", s.Fetched, s.Pending)
	}
	// Each parse message counts a URL once: at least the 3, at most 3 for each of the site's 9 pages.
	if s.RobotsRefused < 3 || s.RobotsRefused > 27 {
		t.Errorf("links refused by robots.txt: %d, want 3 to 27", s.RobotsRefused)
	}
	if got := s.Classes[string(errclass.Robots)]; got != 3 {
		t.Errorf("URLs skipped with class robots: %d, want the long robots.txt's site's 3", got)
	}
	be, err := OpenEmbedded(filepath.Join(dir, "st"))
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	st := crawlstate.New(be.Table)
	for j := range 3 {
		for _, site := range []struct {
			base     string
			admitted bool
		}{{short.URL, false}, {long.URL, true}} {
			u, err := urlnorm.Normalize(fmt.Sprintf("%s/private/%d", site.base, j))
			if err != nil {
				t.Fatal(err)
			}
			it, err := st.Get(context.Background(), s.Crawl, urlnorm.Key(u.String()))
			switch {
			case site.admitted && (err != nil || it.State != crawlstate.Skipped || it.Class != errclass.Robots):
				t.Errorf("%s: %+v, %v; want admitted and skipped with class robots", u, it, err)
			case !site.admitted && !errors.Is(err, table.ErrNotFound):
				t.Errorf("%s: %+v, %v; want no URL item: refused before its admission", u, it, err)
			}
		}
	}
}
