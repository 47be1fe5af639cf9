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
	"sync"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/demo/demosite"
)

// TestCtrlCFetchesNothingTwice interrupts a crawl with many fetches in flight, as Ctrl-C does,
// and runs the same command again to the end: the interrupted run finishes its batches in flight
// instead of dropping them, so the site, which counts what it served, served no page twice. The
// interrupted run still prints one line on what was saved and how to resume.
func TestCtrlCFetchesNothingTwice(t *testing.T) {
	site, seeds := demoSeeds(t, 300, 6, 2000)
	dir := t.TempDir()
	args := []string{"run", "--state", "st", "--allow-net", "127.0.0.0/8", "--host-rps", "0", "--concurrency", "32", "--quiet", seeds}
	code, _, stderr := interruptBin(t, dir, site, 40, args...)
	first := stderr
	if code != ExitInterrupted {
		t.Fatalf("exit %d, want %d\n%s", code, ExitInterrupted, stderr)
	}
	if !regexp.MustCompile(`(?m)^crawl: interrupted: \d+ pages of crawl seeds-\w+ are saved in st; run the same command again to resume$`).MatchString(stderr) {
		t.Errorf("the interrupted run does not say what was saved and how to resume:\n%s", stderr)
	}
	interruptedAt := site.Fetched()
	if interruptedAt >= 300 {
		t.Fatalf("the crawl ended before the interrupt (%d pages)", interruptedAt)
	}
	code, stdout, stderr := runBin(t, dir, nil, args...)
	if code != ExitOK {
		t.Fatalf("the resumed run: exit %d\n%s", code, stderr)
	}
	if site.Fetched() != 300 {
		// Seen once in a full make test (101 pages, both runs exiting as expected): the runs'
		// output says which URLs were left and why.
		t.Errorf("the site served %d distinct pages, want 300 (%d when interrupted)\ninterrupted run:\n%s\nresumed run:\n%s%s",
			site.Fetched(), interruptedAt, first, stdout, stderr)
	}
	if r := site.Repeats(); len(r) != 0 {
		t.Errorf("interrupted after %d pages: %d pages were fetched twice (%v), want none", interruptedAt, len(r), r)
	}
}

// hangingSite serves a demo site whose home page and robots.txt answer at once and whose other
// pages hang until the client goes away; started counts the requests of those.
func hangingSite(t *testing.T) (seeds string, started func() int) {
	t.Helper()
	site := demosite.New(50, 5, 500)
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" || r.URL.Path == "/robots.txt" {
			site.ServeHTTP(w, r)
			return
		}
		mu.Lock()
		n++
		mu.Unlock()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return writeFile(t, "seeds.txt", srv.URL+"/\n"), func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
}

// TestAStopIsBounded interrupts a run whose fetches hang: after the first Ctrl-C the run waits
// for its batches in flight and says so, and a second Ctrl-C stops it at once (its grace is ten
// minutes, and its fetches would take two to time out); with --stop-grace 3s, one Ctrl-C stops it
// once the grace has passed. Either way the last line says that batches were cut short.
func TestAStopIsBounded(t *testing.T) {
	for _, tt := range []struct {
		name    string
		grace   string
		signals int
	}{
		{"a second ctrl-c", "10m", 2},
		{"the grace ends", "3s", 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			seeds, started := hangingSite(t)
			cmd := exec.Command(crawlBin(t), "run", "--state", "st", "--allow-net", "127.0.0.0/8", "--host-rps", "0",
				"--fetch-timeout", "2m", "--stop-grace", tt.grace, "--quiet", seeds)
			cmd.Dir = t.TempDir()
			// stderr goes to a file, which the test reads while the command writes it.
			stderrFile, err := os.Create(filepath.Join(cmd.Dir, "stderr"))
			if err != nil {
				t.Fatal(err)
			}
			defer stderrFile.Close()
			cmd.Stderr = stderrFile
			stderr := fileText(stderrFile.Name())
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			waitUntil(t, "a fetch to hang", func() bool { return started() > 0 })
			if err := cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
			waitUntil(t, "the run to say it finishes its batches in flight", func() bool {
				return strings.Contains(stderr.String(), "the batches in flight finish first")
			})
			if tt.signals == 2 {
				if err := cmd.Process.Signal(os.Interrupt); err != nil {
					t.Fatal(err)
				}
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			select {
			case err = <-exited:
			case <-time.After(20 * time.Second):
				t.Fatalf("the run did not stop within 20s\n%s", stderr.String())
			}
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != ExitInterrupted {
				t.Errorf("the run ended with %v, want exit %d\n%s", err, ExitInterrupted, stderr.String())
			}
			if !regexp.MustCompile(`crawl: interrupted: \d+ pages of crawl seeds-\w+ are saved in st \([1-9]\d* batches in flight were cut short: their URLs are fetched again\); run the same command again to resume`).MatchString(stderr.String()) {
				t.Errorf("the last line does not say that batches were cut short:\n%s", stderr.String())
			}
		})
	}
}

// fileText reads a file that a process writes, as text, at each call of String.
type fileText string

func (f fileText) String() string {
	b, _ := os.ReadFile(string(f))
	return string(b)
}

// waitUntil polls cond until it holds, or fails the test after 60 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 60s for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // a poll interval, with the deadline above
	}
}

// heldSite serves a demo site that counts the requests of each path. Until release is called, the
// requests of its pages (not its home page or robots.txt) are held; after, until serve is called,
// each request that comes is held until the client goes away, as a slow page is: a run that goes
// on fetching after its first Ctrl-C is cut short by its grace with those requests in flight.
type heldSite struct {
	site     *demosite.Site
	mu       sync.Mutex
	requests map[string]int
	held     int
	released chan struct{}
	serving  chan struct{}
}

func newHeldSite(t *testing.T, pages int) (*heldSite, string) {
	t.Helper()
	s := &heldSite{site: demosite.New(pages, 6, 500), requests: map[string]int{}, released: make(chan struct{}),
		serving: make(chan struct{})}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, writeFile(t, "seeds.txt", srv.URL+"/\n")
}

func (s *heldSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests[r.URL.Path]++
	s.mu.Unlock()
	select {
	case <-s.serving:
		s.site.ServeHTTP(w, r)
		return
	default:
	}
	if r.URL.Path == "/" || r.URL.Path == "/robots.txt" {
		s.site.ServeHTTP(w, r)
		return
	}
	select {
	case <-s.released:
		<-r.Context().Done() // a request sent after the interrupt reached the run
		return
	default:
	}
	s.mu.Lock()
	s.held++
	s.mu.Unlock()
	select {
	case <-s.released:
		s.site.ServeHTTP(w, r)
	case <-r.Context().Done():
	}
}

// release lets the held requests go, and holds every later one for good.
func (s *heldSite) release() { close(s.released) }

// serve serves every request from now on.
func (s *heldSite) serve() { close(s.serving) }

func (s *heldSite) heldNow() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held
}

// twice returns the paths requested more than once, robots.txt aside.
func (s *heldSite) twice() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for p, n := range s.requests {
		if n > 1 && p != "/robots.txt" {
			out[p] = n
		}
	}
	return out
}

// TestOneCtrlCFetchesNoPageTwice interrupts a run once while some of its GETs are in flight, held
// by the site until the run has the interrupt, with more URLs of the same batch not started. The
// GETs in flight finish and are stored; the run starts no new GET, so its grace does not run out
// and cut a batch short; and the next run fetches every page once. On the code before, the batch
// went on with its other URLs after the interrupt, whose GETs the grace cut short, and the next
// run fetched them again.
func TestOneCtrlCFetchesNoPageTwice(t *testing.T) {
	const pages = 60
	site, seeds := newHeldSite(t, pages)
	dir := t.TempDir()
	args := []string{"run", "--state", "st", "--allow-net", "127.0.0.0/8", "--host-rps", "0", "--fetch-timeout", "2m",
		"--stop-grace", "5s", "--quiet", seeds}
	cmd := exec.Command(crawlBin(t), args...)
	cmd.Dir = dir
	stderrFile, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderrFile.Close()
	cmd.Stderr = stderrFile
	stderr := fileText(stderrFile.Name())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitUntil(t, "a GET to be held", func() bool { return site.heldNow() > 0 })
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	// The run says so once its stop takes more than a second: it has the interrupt.
	waitUntil(t, "the run to say it finishes its batches in flight", func() bool {
		return strings.Contains(stderr.String(), "the batches in flight finish first")
	})
	site.release()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err = <-exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("the run did not stop within 30s\n%s", stderr.String())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != ExitInterrupted {
		t.Fatalf("the run ended with %v, want exit %d\n%s", err, ExitInterrupted, stderr.String())
	}
	first := stderr.String()
	if strings.Contains(first, "cut short") {
		t.Errorf("one Ctrl-C cut batches short:\n%s", first)
	}
	site.serve()
	code, stdout, second := runBin(t, dir, nil, args...)
	if code != ExitOK {
		t.Fatalf("the resumed run: exit %d\n%s%s", code, stdout, second)
	}
	if site.site.Fetched() != pages {
		t.Errorf("the site served %d distinct pages, want %d", site.site.Fetched(), pages)
	}
	if r := site.twice(); len(r) != 0 {
		t.Errorf("%d pages were requested twice (%v), want none\ninterrupted run:\n%s\nresumed run:\n%s", len(r), r, first, second)
	}
}
