package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
)

// TestAResumeAfterKillDoesNotWaitOutTheDeadRunsMessages kills a run with kill -9 and resumes it
// with a visibility timeout of ten minutes: the resumed run must take the dead run's messages back
// at once (it holds the state alone) and finish well within the test's deadline, and its rate must
// count only its own pages, as the site counts what it served during the resume.
func TestAResumeAfterKillDoesNotWaitOutTheDeadRunsMessages(t *testing.T) {
	site, seeds := demoSeeds(t, 200, 6, 2000)
	dir := t.TempDir()
	args := []string{"run", "--state", "st", "--allow-net", "127.0.0.0/8", "--host-rps", "200", "--concurrency", "4",
		"--visibility", "10m", "--quiet", "--json", seeds}
	killBin(t, dir, site, 30, args...)
	killedAt := site.Fetched()
	if killedAt < 30 || killedAt >= 200 {
		t.Fatalf("killed after %d pages, want between 30 and 199", killedAt)
	}
	served := func() int {
		n := site.Fetched()
		for _, k := range site.Repeats() {
			n += k
		}
		return n
	}
	before := served()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	resume := exec.CommandContext(ctx, crawlBin(t), args...)
	resume.Dir = dir
	var out, errOut bytes.Buffer
	resume.Stdout, resume.Stderr = &out, &errOut
	if err := resume.Run(); err != nil {
		t.Fatalf("the resumed run (ten-minute visibility timeout, two-minute deadline): %v\n%s", err, errOut.String())
	}
	if !regexp.MustCompile(`took back [1-9][0-9]* messages`).MatchString(errOut.String()) {
		t.Errorf("the resumed run does not say it took the dead run's messages back:\n%s", errOut.String())
	}
	s := lastJSON(t, out.String())
	if s.Fetched != 200 || s.Pending != 0 {
		t.Errorf("after the resume: %d fetched, %d pending; want 200 and 0", s.Fetched, s.Pending)
	}
	// The site served this run's pages, and again those the dead run had fetched but not recorded.
	during := served() - before
	if int64(during) < s.FetchedThisRun || int64(during) > s.FetchedThisRun+4 {
		t.Errorf("the site served %d requests during the resume, but the summary says it fetched %d", during, s.FetchedThisRun)
	}
	if got := s.PagesPerSecond * s.ElapsedSeconds; got < float64(s.FetchedThisRun)-0.5 || got > float64(s.FetchedThisRun)+0.5 {
		t.Errorf("the rate %.1f pages/s over %.1fs makes %.1f pages, want this run's %d", s.PagesPerSecond, s.ElapsedSeconds, got, s.FetchedThisRun)
	}
}

// TestTheProgressLineSaysWhatItWaitsFor runs a crawl on a terminal, as a user sees it, of a site
// whose politeness spaces requests a second apart: the progress line must say that it waits,
// for what, and when the next message is due.
func TestTheProgressLineSaysWhatItWaitsFor(t *testing.T) {
	_, seeds := demoSeeds(t, 4, 3, 500)
	dir := t.TempDir()
	cmd := exec.Command(crawlBin(t), "run", "--state", "st", "--allow-net", "127.0.0.0/8", "--host-rps", "1", seeds)
	cmd.Dir = dir
	tty, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	var screen bytes.Buffer
	io.Copy(&screen, tty) // until the command ends and the terminal closes (EIO)
	if err := cmd.Wait(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatal(err)
		}
		t.Fatalf("exit %d\n%s", exit.ExitCode(), screen.String())
	}
	m := regexp.MustCompile(`waiting: (\d+) messages delayed or in flight \(politeness waits, retries\), the next due in ([0-9.]+m?s)`).
		FindStringSubmatch(screen.String())
	if m == nil {
		t.Fatalf("no progress line says what the run waits for:\n%q", screen.String())
	}
	if n, _ := strconv.Atoi(m[1]); n < 1 {
		t.Errorf("waiting for %d messages", n)
	}
	if d, err := time.ParseDuration(m[2]); err != nil || d > time.Second+100*time.Millisecond {
		t.Errorf("the next due in %s (%v), want within the one-second politeness interval", m[2], err)
	}
	if !strings.Contains(screen.String(), "finished") {
		t.Errorf("the crawl did not finish:\n%s", screen.String())
	}
}

// TestAnInterruptIsNotAFailure interrupts a run as Ctrl-C does: stderr must hold no warning, and
// one line that says what was saved and how to resume.
func TestAnInterruptIsNotAFailure(t *testing.T) {
	site, seeds := demoSeeds(t, 300, 6, 2000)
	dir := t.TempDir()
	code, stdout, stderr := interruptBin(t, dir, site, 40, "run", "--state", "st", "--allow-net", "127.0.0.0/8",
		"--host-rps", "300", "--quiet", seeds)
	if code != ExitInterrupted {
		t.Fatalf("exit %d, want %d\n%s", code, ExitInterrupted, stderr)
	}
	if strings.Contains(stderr, "WARN") || strings.Contains(stderr, "ERROR") || strings.Contains(stderr, "context canceled") {
		t.Errorf("an interrupt printed warnings:\n%s", stderr)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	last := lines[len(lines)-1]
	if len(lines) != 2 || !regexp.MustCompile(`^crawl: interrupted: \d+ pages of crawl seeds-\w+ are saved in st; run the same command again to resume$`).MatchString(last) {
		t.Errorf("stderr after an interrupt, want the crawl's name and one line on what was saved and how to resume:\n%s", stderr)
	}
	if !strings.Contains(stdout, "stopped") {
		t.Errorf("stdout has no summary of the stopped run:\n%s", stdout)
	}
}
