package cli

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/records"
	"github.com/crawlstack/crawlstack/shared/demo/demosite"
)

// TestFreshRecrawlsTheEndedCrawl: `crawl run --fresh` of an ended crawl recrawls it. The site,
// which answers 304 to a conditional GET of a page's version, answers every page of the second
// crawl so, and every record `crawl export` gives of it is marked unchanged.
func TestFreshRecrawlsTheEndedCrawl(t *testing.T) {
	site := demosite.New(20, 3, 500)
	site.Validators = true
	srv := httptest.NewServer(site)
	defer srv.Close()
	seeds := writeFile(t, "seeds.txt", srv.URL+"/\n")
	state := t.TempDir()
	args := []string{"--state", state, "--allow-net", "127.0.0.0/8", "--host-rps", "0", "--quiet", "--json", seeds}
	code, stdout, stderr := runMain(t, append([]string{"run"}, args...)...)
	first := lastJSON(t, stdout)
	if code != ExitOK || first.Fetched != 20 || site.Traffic().NotModified != 0 {
		t.Fatalf("the first crawl: exit %d, %d fetched, traffic %+v\n%s", code, first.Fetched, site.Traffic(), stderr)
	}
	site.ResetTraffic()
	code, stdout, stderr = runMain(t, append([]string{"run", "--fresh"}, args...)...)
	second := lastJSON(t, stdout)
	if code != ExitOK || second.Crawl == first.Crawl || second.Fetched != 20 {
		t.Fatalf("--fresh: exit %d, crawl %s (the first: %s), %d fetched\n%s", code, second.Crawl, first.Crawl, second.Fetched, stderr)
	}
	if got := site.Traffic(); got.Requests != 20 || got.NotModified != 20 {
		t.Errorf("the recrawl made %+v: want each of the 20 pages asked for once, and answered 304", got)
	}
	code, stdout, stderr = runMain(t, "export", "--state", state, second.Crawl)
	if code != ExitOK {
		t.Fatalf("crawl export: exit %d\n%s", code, stderr)
	}
	unchanged := 0
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var r records.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("an exported record: %v: %s", err, line)
		}
		if r.Unchanged && r.Title != "" {
			unchanged++
		}
	}
	if unchanged != 20 {
		t.Errorf("%d of the recrawl's records are unchanged with a title, want 20:\n%s", unchanged, stdout)
	}
}
