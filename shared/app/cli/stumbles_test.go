package cli

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/testkit/e2etest"
)

// pasted runs a command the CLI suggested, split as a shell splits a line without quotes, and
// fails the test if it has quotes (the hint names a plain directory) or does not start "crawl".
func pasted(t *testing.T, hint string) (int, string, string) {
	t.Helper()
	if strings.ContainsAny(hint, `'"`) {
		t.Fatalf("hint %q is quoted: this test splits plain words", hint)
	}
	words := strings.Fields(hint)
	if len(words) < 2 || words[0] != "crawl" {
		t.Fatalf("hint %q is not a crawl command", hint)
	}
	return runMain(t, words[1:]...)
}

// A hint after a run with --state names that --state: pasted as it is, it works.
func TestTheFailuresHintCanBePasted(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	state := filepath.Join(t.TempDir(), "my-state")
	seeds := writeFile(t, "seeds.txt", srv.URL+"/gone\n")
	code, _, stderr := runMain(t, "run", "--state", state, "--allow-net", "127.0.0.0/8", "--host-rps", "0", "--quiet", seeds)
	if code != ExitFailed {
		t.Fatalf("exit %d, want %d (no page fetched)\n%s", code, ExitFailed, stderr)
	}
	m := regexp.MustCompile(`\((crawl failures [^()]+) lists why\)`).FindStringSubmatch(stderr)
	if m == nil || !strings.Contains(m[1], "--state "+state) {
		t.Fatalf("no failures hint with --state %s:\n%s", state, stderr)
	}
	code, stdout, errOut := pasted(t, m[1])
	if code != ExitOK || !strings.Contains(stdout, srv.URL+"/gone") {
		t.Errorf("%s: exit %d\n%s%s\nwant the failed URL listed", m[1], code, stdout, errOut)
	}
}

// A crawl whose run was interrupted is said interrupted, not running, by crawl status (its list
// and its screen), with a command that goes on, which works pasted as it is; while the run is
// on, it is running.
func TestStatusSaysInterruptedOnceTheRunIsGone(t *testing.T) {
	site, seeds := newHeldSite(t, 6)
	dir := t.TempDir()
	state := filepath.Join(dir, "st") // runArgs' --state, in dir
	cmd, stderr := startRun(t, dir, runArgs(seeds))
	waitUntil(t, "a GET to be held", func() bool { return site.heldNow() > 0 })
	if code, out, errOut := runMain(t, "status", "--state", state); code != ExitOK || !strings.Contains(out, " running ") {
		t.Errorf("status while the run is on: exit %d\n%s%s\nwant running", code, out, errOut)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	site.release()
	err := awaitExit(t, cmd, 30*time.Second, stderr)
	if exit := (*exec.ExitError)(nil); !errors.As(err, &exit) || exit.ExitCode() != ExitInterrupted {
		t.Fatalf("the run ended with %v, want exit %d\n%s", err, ExitInterrupted, stderr.String())
	}
	code, list, errOut := runMain(t, "status", "--state", state)
	if code != ExitOK || !strings.Contains(list, " interrupted ") || strings.Contains(list, " running ") {
		t.Fatalf("status after the interrupt: exit %d\n%s%s\nwant the crawl interrupted", code, list, errOut)
	}
	crawl := strings.Fields(strings.Split(strings.TrimSpace(list), "\n")[1])[0]
	code, screen, errOut := runMain(t, "status", "--state", state, crawl)
	m := regexp.MustCompile(`waiting: no crawl run works on it \(one was interrupted\): (crawl run [^\n]+) goes on`).FindStringSubmatch(screen)
	if code != ExitOK || !strings.HasPrefix(screen, "crawl "+crawl+": interrupted") || m == nil {
		t.Fatalf("status %s: exit %d\n%s%s\nwant it interrupted, with the command that goes on", crawl, code, screen, errOut)
	}
	site.serve()
	if code, out, errOut := pasted(t, m[1]); code != ExitOK {
		t.Fatalf("%s: exit %d\n%s%s", m[1], code, out, errOut)
	}
	if _, screen, _ := runMain(t, "status", "--state", state, crawl); !strings.HasPrefix(screen, "crawl "+crawl+": finished") {
		t.Errorf("status after the pasted run:\n%s\nwant it finished", screen)
	}
}

// Every command that names a crawl, given one that is not on record, says so in the user's words:
// it fails, names the crawl, and prints none of the state table's keys or the port's sentinel texts.
func TestNoInternalKeyTextReachesAUser(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	state := filepath.Join(t.TempDir(), "st")
	seeds := writeFile(t, "seeds.txt", srv.URL+"/gone\n")
	if code, _, stderr := runMain(t, "run", "--state", state, "--allow-net", "127.0.0.0/8", "--host-rps", "0", "--quiet", seeds); code != ExitFailed {
		t.Fatalf("the crawl: exit %d, want %d (no page fetched)\n%s", code, ExitFailed, stderr)
	}
	for _, args := range e2etest.UnknownCrawlCommands("no-such-crawl") {
		code, stdout, stderr := runMain(t, append(args, "--state", state)...)
		out := stdout + stderr
		if code == ExitOK || !strings.Contains(stderr, "no-such-crawl") {
			t.Errorf("crawl %s: exit %d\n%s\nwant a failure that names the crawl", strings.Join(args, " "), code, out)
		}
		if bad := e2etest.InternalText(out); bad != "" {
			t.Errorf("crawl %s shows the internal text %q:\n%s", strings.Join(args, " "), bad, out)
		}
	}
}
