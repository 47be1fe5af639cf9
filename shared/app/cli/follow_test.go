package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// crawl export --follow writes the pages as they land: the home page's record while the site holds
// every other page, then the rest, and it ends by itself once the crawl is over, with each page
// once and the same pages as an export after the end.
func TestExportFollowWritesPagesAsTheyLand(t *testing.T) {
	const pages = 12
	site, seeds := newHeldSite(t, pages)
	dir := t.TempDir()
	run, runErr := startRun(t, dir, runArgs(seeds))
	waitUntil(t, "a GET to be held", func() bool { return site.heldNow() > 0 })
	code, list, errOut := runMain(t, "list", "--state", filepath.Join(dir, "st"), "--json")
	var crawls []struct{ Crawl string }
	if err := json.Unmarshal([]byte(list), &crawls); code != ExitOK || err != nil || len(crawls) != 1 {
		t.Fatalf("crawl list: exit %d (%v)\n%s%s", code, err, list, errOut)
	}
	crawl := crawls[0].Crawl

	out := filepath.Join(dir, "follow.jsonl")
	follow := exec.Command(crawlBin(t), "export", "--state", "st", "--follow", "--follow-every", "100ms", "-o", out, crawl)
	follow.Dir = dir
	var followErr strings.Builder
	follow.Stderr = &followErr
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { follow.Process.Kill() })
	urls := func() []string {
		b, _ := os.ReadFile(out)
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var r struct{ URL string }
			if json.Unmarshal([]byte(line), &r) == nil && r.URL != "" {
				got = append(got, r.URL)
			}
		}
		return got
	}
	waitUntil(t, "the home page's record, while the other pages are held", func() bool { return len(urls()) > 0 })
	// Nothing is released yet: every page but the home page is held, and the crawl goes on.
	if n := len(urls()); n >= pages {
		t.Fatalf("%d records written while the site held its pages", n)
	}
	site.serve()   // the later requests are served,
	site.release() // and the held ones go on
	if err := awaitExit(t, run, 60*time.Second, runErr); err != nil {
		t.Fatalf("the run: %v\n%s", err, runErr.String())
	}
	exited := make(chan error, 1)
	go func() { exited <- follow.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("export --follow: %v\n%s", err, followErr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("export --follow did not end within 60s of the crawl's end\n%s", followErr.String())
	}
	got := urls()
	if len(got) != pages || len(slices.Compact(slices.Sorted(slices.Values(got)))) != pages {
		t.Errorf("export --follow wrote %d records (%v), want the %d pages once each\n%s", len(got), got, pages, followErr.String())
	}
	code, all, errOut := runMain(t, "export", "--state", filepath.Join(dir, "st"), crawl)
	var after []string
	for _, line := range strings.Split(strings.TrimSpace(all), "\n") {
		var r struct{ URL string }
		if json.Unmarshal([]byte(line), &r) == nil {
			after = append(after, r.URL)
		}
	}
	if code != ExitOK || !slices.Equal(slices.Sorted(slices.Values(after)), slices.Sorted(slices.Values(got))) {
		t.Errorf("export after the end: exit %d, %d pages, want the %d that --follow wrote\n%s", code, len(after), len(got), errOut)
	}
	if code, _, errOut := runMain(t, "export", "--state", filepath.Join(dir, "st"), "--follow", "--format", "csv", crawl); code != ExitUsage || !strings.Contains(errOut, "JSON lines") {
		t.Errorf("--follow with csv: exit %d\n%s", code, errOut)
	}
}
