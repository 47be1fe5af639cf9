package cli

import (
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/crawlstack/crawlstack/shared/demo/demosite"
)

// crawl run SPEC crawls as the spec says, within the flags' bounds.
func TestRunASpec(t *testing.T) {
	site := demosite.New(30, 4, 500)
	srv := httptest.NewServer(site)
	defer srv.Close()
	spec := writeFile(t, "shop.yaml", "version: 1\nseeds:\n  - "+srv.URL+"/\nmax_pages: 6\nexclude: ['/p/1$']\n")
	code, stdout, stderr := runMain(t, "run", "--state", t.TempDir(), "--allow-net", "127.0.0.0/8", "--host-rps", "0", "--json", spec)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	s := lastJSON(t, stdout)
	// max_pages bounds the pages fetched: the link robots.txt disallows is refused by parse, and
	// takes no page of it.
	if !s.Finished || s.Fetched != 6 || s.RobotsRefused != 1 || s.Classes["robots"] != 0 || s.Pending != 0 {
		t.Errorf("summary %+v, want 6 pages fetched (the spec's max_pages) and 1 link refused by robots.txt", s.Counts)
	}
	if n := site.Fetched(); int64(n) != s.Fetched {
		t.Errorf("the site served %d pages, the summary says %d", n, s.Fetched)
	}
	if n := site.Hits("/p/1"); n != 0 {
		t.Errorf("the excluded page was fetched %d times", n)
	}
}

// A spec with problems crawls nothing, and crawl run says each problem with its line.
func TestRunABadSpec(t *testing.T) {
	spec := writeFile(t, "shop.yaml", "version: 1\nseeds: [http://127.0.0.1:1/]\nmax_pages: 50\nrate: 3\nextract:\n  a: {css: 'p[['}\n  b: {css: p, colour: red}\n")
	state := t.TempDir()
	code, stdout, stderr := runMain(t, "run", "--state", state, "--max-pages", "20", "--host-rps", "2", spec)
	if code != ExitUsage {
		t.Fatalf("exit %d, want %d\n%s%s", code, ExitUsage, stdout, stderr)
	}
	for _, want := range []string{
		"shop.yaml: line 3: max_pages: 50 is over the stack's bound of 20",
		"shop.yaml: line 4: rate: 3 is over the stack's bound of 2",
		"shop.yaml: line 6: extract.a.css: selector \"p[[\"",
		"shop.yaml: line 7: extract.b.colour: unknown setting",
		"4 problem(s) in the crawl spec (docs/spec.md): nothing crawled",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
	if ents, err := os.ReadDir(state); err != nil || len(ents) != 0 {
		t.Errorf("a bad spec left state behind: %v, %v", ents, err)
	}
}
