package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRedriveSaysWhatToRunNext runs the built command as a user recovering dead letters: a
// redrive of a state directory that does not exist is an error that creates nothing; a redrive of
// the real one says what to run next, and that command (with no seed file) finishes the crawl, as
// the site's count of the pages it served shows.
func TestRedriveSaysWhatToRunNext(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := runBin(t, dir, nil, "redrive", "--state", "typo", "fetch")
	if code == ExitOK || !strings.Contains(stderr, "no crawl state in typo") {
		t.Errorf("redrive of a missing state: exit %d, stderr %q; want an error naming it", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "typo")); err == nil {
		t.Errorf("redrive created the missing state directory")
	}
	for _, cmd := range [][]string{{"status"}, {"failures", "x"}, {"pause", "x"}} {
		if code, _, stderr := runBin(t, dir, nil, append([]string{cmd[0], "--state", "typo"}, cmd[1:]...)...); code == ExitOK || !strings.Contains(stderr, "no crawl state in typo") {
			t.Errorf("crawl %s of a missing state: exit %d, stderr %q", cmd[0], code, stderr)
		}
	}

	// A run killed with --max-receive 1: the messages it held have had their one receive, so the
	// next run, which takes them back, moves them to the dead-letter queues, and their URLs stay
	// pending.
	site, seeds := demoSeeds(t, 120, 6, 2000)
	run := []string{"run", "--state", "st", "--allow-net", "127.0.0.0/8", "--host-rps", "200", "--concurrency", "4",
		"--max-receive", "1", "--quiet", "--json", seeds}
	killBin(t, dir, site, 20, run...)
	code, stdout, stderr := runBin(t, dir, nil, run...)
	s := lastJSON(t, stdout)
	if code != ExitOK || s.Pending == 0 || len(s.DeadLetters) == 0 {
		t.Fatalf("the run after the kill: exit %d, %d pending, dead letters %v; want URLs pending and messages dead\n%s", code, s.Pending, s.DeadLetters, stderr)
	}
	next := "crawl run --state st"
	for q := range s.DeadLetters {
		code, stdout, stderr = runBin(t, dir, nil, "redrive", "--state", "st", q)
		if code != ExitOK || !strings.Contains(stdout, "moved ") || !strings.Contains(stdout, "to process them, run: "+next+" ") {
			t.Fatalf("redrive %s: exit %d, want it to say what to run next\nstdout: %s\nstderr: %s", q, code, stdout, stderr)
		}
	}
	code, stdout, stderr = runBin(t, dir, nil, append(strings.Fields(next)[1:], "--allow-net", "127.0.0.0/8", "--host-rps", "0", "--json")...)
	if code != ExitOK {
		t.Fatalf("%s: exit %d\n%s", next, code, stderr)
	}
	after := lastJSON(t, stdout)
	if len(after.Also) != 1 || after.Also[0].Crawl != s.Crawl || after.Also[0].Fetched != 120 || after.Also[0].Pending != 0 {
		t.Errorf("the run without a seed file: %+v; want crawl %s with all 120 pages fetched and none pending", after, s.Crawl)
	}
	if site.Fetched() != 120 {
		t.Errorf("the site served %d distinct pages, want 120", site.Fetched())
	}
}
