package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/demo/demosite"
	"github.com/crawlstack/crawlstack/shared/port/queue"
	"github.com/crawlstack/crawlstack/shared/testkit/e2etest"
)

// TestMain lets a test re-run this binary as the crawl command, to kill it mid-crawl.
func TestMain(m *testing.M) {
	if args := os.Getenv("CRAWL_CLI_CHILD_ARGS"); args != "" {
		var a []string
		if err := json.Unmarshal([]byte(args), &a); err != nil {
			panic(err)
		}
		os.Exit(Main(context.Background(), a, os.Stdout, os.Stderr))
	}
	code := m.Run()
	if built.path != "" {
		os.RemoveAll(filepath.Dir(built.path))
	}
	os.Exit(code)
}

func runMain(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Main(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// lastJSON decodes stdout, which --json makes the summary alone: one JSON document, as jq reads.
func lastJSON(t *testing.T, stdout string) Summary {
	t.Helper()
	var s Summary
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, stdout)
	}
	return s
}

func TestUsageErrors(t *testing.T) {
	seed := writeFile(t, "seeds.txt", "http://127.0.0.1:1/\n")
	tests := []struct {
		name string
		args []string
		code int
		says string
	}{
		{"no command", nil, ExitUsage, "usage"},
		{"unknown command", []string{"crawl-all"}, ExitUsage, "unknown command"},
		{"help", []string{"help"}, ExitOK, ""},
		{"no seed file", []string{"run", "--state", t.TempDir()}, ExitUsage, "give a SEEDFILE"},
		{"missing seed file", []string{"run", "--state", t.TempDir(), filepath.Join(t.TempDir(), "nope.txt")}, ExitUsage, "cannot read the seed file"},
		{"bad concurrency", []string{"run", "--concurrency", "0", seed}, ExitUsage, "--concurrency"},
		{"bad backend", []string{"run", "--backend", "gcp", seed}, ExitUsage, "--backend"},
		{"state with the aws backend", []string{"run", "--backend", "aws", "--state", "x", seed}, ExitUsage, "--state is for the embedded backend"},
		{"budget on the embedded backend", []string{"run", "--budget-usd", "5", seed}, ExitUsage, "--budget-usd meters what a crawl costs on AWS"},
		{"bad prices", []string{"run", "--backend", "aws", "--prices", "sqs=cheap", seed}, ExitUsage, "prices"},
		{"negative budget", []string{"run", "--backend", "aws", "--budget-usd", "-1", seed}, ExitUsage, "--budget-usd -1: must be 0 (no budget) or more"},
		{"bad scope", []string{"run", "--state", t.TempDir(), "--scope", "planet", seed}, ExitUsage, "planet"},
		{"bad allow-net", []string{"run", "--state", t.TempDir(), "--allow-net", "10.0.0.0/99", seed}, ExitUsage, "allow-net"},
		{"bad include", []string{"run", "--state", t.TempDir(), "--include", "a(b", seed}, ExitUsage, "include"},
		{"unknown flag", []string{"run", "--turbo", seed}, ExitUsage, "turbo"},
		{"browser user agent without its fingerprint", []string{"run", "--state", t.TempDir(), "--user-agent", "browser", seed}, ExitUsage,
			`--user-agent "browser": user agent "browser": only with the TLS fingerprint "chrome"`},
		{"misspelt retry class", []string{"run", "--state", t.TempDir(), "--retry-classes", "timout=2", seed}, ExitUsage,
			`--retry-classes "timout=2": unknown error class "timout"; did you mean "timeout"?`},
		{"bad log level", []string{"run", "--state", t.TempDir(), "--log-level", "loud", seed}, ExitUsage, "--log-level \"loud\""},
		{"bad log format", []string{"run", "--state", t.TempDir(), "--log-format", "xml", seed}, ExitUsage, "--log-format \"xml\""},
		{"bad invoke log format", []string{"invoke", "--log-format", "xml", "fetch", seed}, ExitUsage, "--log-format"},
		{"otel endpoint without a scheme", []string{"run", "--state", t.TempDir(), "--otel", "localhost:4318", seed}, ExitUsage, "--otel: OTLP endpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runMain(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstderr: %s", code, tt.code, stderr)
			}
			if !strings.Contains(stdout+stderr, tt.says) {
				t.Errorf("output does not say %q:\n%s%s", tt.says, stdout, stderr)
			}
		})
	}
}

func TestBadSeedLinesAreReportedAndTheRestCrawled(t *testing.T) {
	site := demosite.New(5, 2, 500)
	srv := httptest.NewServer(site)
	defer srv.Close()
	seeds := writeFile(t, "seeds.txt", "# demo\n"+srv.URL+"/\nnot a url\nftp://example.test/\n\n"+srv.URL+"/p/2\n")
	code, stdout, stderr := runMain(t, "run", "--state", t.TempDir(), "--allow-net", "127.0.0.0/8", "--host-rps", "0", "--json", seeds)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"line 3", "line 4"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not report %s:\n%s", want, stderr)
		}
	}
	s := lastJSON(t, stdout)
	if !s.Finished || s.Fetched != 5 || s.Pending != 0 || s.BadSeedLines != 2 {
		t.Errorf("summary = %+v, want 5 fetched, finished, 2 bad seed lines", s)
	}

	allBad := writeFile(t, "bad.txt", "nope\n\n# only junk\nmailto:x@example.test\n")
	code, _, stderr = runMain(t, "run", "--state", t.TempDir(), allBad)
	if code != ExitUsage || !strings.Contains(stderr, "no valid seed URL") {
		t.Errorf("a seed file with no valid URL: exit %d, stderr %s", code, stderr)
	}
}

// TestTheCrawlCountersAreWrittenByTheEnd checks the counters that crawl run's handlers buffer
// for their process: by the end of the run the crawl's record holds them all, and the summary,
// read from them, counts what a scan of the crawl's items does.
func TestTheCrawlCountersAreWrittenByTheEnd(t *testing.T) {
	site := demosite.New(40, 4, 500)
	srv := httptest.NewServer(site)
	defer srv.Close()
	state := t.TempDir()
	seeds := writeFile(t, "seeds.txt", srv.URL+"/\n")
	code, stdout, stderr := runMain(t, "run", "--state", state, "--allow-net", "127.0.0.0/8", "--host-rps", "0", "--json", seeds)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	s := lastJSON(t, stdout)
	c := checkSummaryCountsTheItems(t, state, s)
	if s.Fetched == 0 || c.Fetched != s.Fetched || c.Skipped != s.Skipped || c.Seen != s.Seen {
		t.Errorf("crawl counters %+v; the summary counted %d seen, %d fetched, %d skipped", c, s.Seen, s.Fetched, s.Skipped)
	}
}

// checkSummaryCountsTheItems holds the counts of the summary s of a run on the embedded state
// against a scan of its crawl's items (crawlstate.URLs.Tally), the oracle of a summary read from
// the crawl's counters, and returns the counters as written.
func checkSummaryCountsTheItems(t *testing.T, state string, s Summary) crawlstate.Counters {
	t.Helper()
	be, err := OpenEmbedded(state)
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	st := crawlstate.New(be.Table)
	items, err := st.Tally(context.Background(), s.Crawl)
	if err != nil {
		t.Fatal(err)
	}
	if want := countsOf(items); !reflect.DeepEqual(s.Counts.classless(), want.classless()) || !maps.Equal(s.Classes, want.Classes) {
		t.Errorf("the summary counts %+v; the crawl's items %+v", s.Counts, want)
	}
	c, err := st.Counters(context.Background(), s.Crawl)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// classless is n without its classes and rate, to compare the rest.
func (n Counts) classless() Counts {
	n.Classes, n.PagesPerSecond = nil, 0
	return n
}

// TestARefusedSeedSaysWhyAndWhatToDo runs the command as a newcomer does, on a seed of their own
// machine: it must say that the address is not public, name --allow-net, exit non-zero because
// nothing could be fetched, and print no path that does not exist.
func TestARefusedSeedSaysWhyAndWhatToDo(t *testing.T) {
	site, seeds := demoSeeds(t, 3, 2, 500)
	dir := t.TempDir()
	code, stdout, stderr := runBin(t, dir, nil, "run", "--state", "st", seeds)
	if code != ExitFailed {
		t.Errorf("exit %d, want %d: no seed could be fetched", code, ExitFailed)
	}
	body, err := os.ReadFile(seeds)
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(strings.TrimSpace(string(body)), "http://")
	host = host[:strings.LastIndex(host, ":")]
	for _, want := range []string{"not public", "--allow-net " + host, "no page could be fetched"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "ssrf: address") || strings.Contains(stderr, "1 URLs") {
		t.Errorf("the explanation repeats its class or miscounts:\n%s", stderr)
	}
	if n := site.Fetched(); n != 0 {
		t.Errorf("the loopback site served %d pages without --allow-net", n)
	}
	// Every path the output names must exist.
	for _, line := range strings.Split(stdout+stderr, "\n") {
		for _, f := range strings.Fields(line) {
			if strings.HasPrefix(f, "st/") || strings.HasPrefix(f, "st"+string(filepath.Separator)) {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Errorf("the output names %s, which does not exist: %v", f, err)
				}
			}
		}
	}
	code, stdout, _ = runBin(t, dir, nil, "run", "--state", "st2", "--json", seeds)
	s := lastJSON(t, stdout)
	if code != ExitFailed || s.Fetched != 0 || s.Classes["ssrf"] != 1 || s.Pages != "" || s.Records != "" {
		t.Errorf("exit %d, summary %+v: want exit 1, the seed skipped as ssrf, and no pages or records path", code, s)
	}
}

func TestKillDashNineThenResume(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child process")
	}
	site := demosite.New(200, 6, 4000)
	srv := httptest.NewServer(site)
	defer srv.Close()
	state := t.TempDir()
	seeds := writeFile(t, "seeds.txt", srv.URL+"/\n")
	args := []string{"run", "--state", state, "--allow-net", "127.0.0.0/8", "--host-rps", "0", "--concurrency", "8",
		"--visibility", "1s", "--quiet", "--json", seeds}
	b, _ := json.Marshal(args)
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), "CRAWL_CLI_CHILD_ARGS="+string(b))
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(60 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for site.Fetched() < 40 {
		select {
		case <-deadline:
			child.Process.Kill()
			t.Fatalf("the child fetched only %d pages in 60s", site.Fetched())
		case <-tick.C:
		}
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	child.Wait()
	killedAt := site.Fetched()
	if killedAt >= 200 {
		t.Fatalf("the child finished before it was killed (%d pages)", killedAt)
	}
	held := heldAfterKill(t, state, seeds)

	code, stdout, stderr := runMain(t, args...)
	if code != ExitOK {
		t.Fatalf("resume: exit %d\n%s", code, stderr)
	}
	s := lastJSON(t, stdout)
	if s.Fetched != 200 || s.Pending != 0 || s.Failed != 0 || len(s.DeadLetters) != 0 {
		t.Errorf("after the resume: %+v, want all 200 fetched, nothing pending, failed or dead", s)
	}
	if site.Fetched() != 200 {
		t.Errorf("the site served %d distinct pages, want 200", site.Fetched())
	}
	// Only pages held by a worker at the kill (claimed, their GET under way or their batch not
	// stored yet) may be fetched again.
	for p := range site.Repeats() {
		if !held[p] {
			t.Errorf("%s was fetched twice, but no worker held it at the kill (held: %d pages)", p, len(held))
		}
	}
	t.Logf("killed after %d pages, %d held; %d fetched twice", killedAt, len(held), len(site.Repeats()))
}

// heldAfterKill returns the paths of the URLs that the killed run's workers held, read from its
// state dir.
func heldAfterKill(t *testing.T, state, seedFile string) map[string]bool {
	t.Helper()
	body, err := os.ReadFile(seedFile)
	if err != nil {
		t.Fatal(err)
	}
	be, err := OpenEmbedded(state)
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	held, err := e2etest.Held(context.Background(), be.Table, crawlOf(be, filepath.Base(seedFile), body))
	if err != nil {
		t.Fatal(err)
	}
	return held
}

func TestRedriveEmbedded(t *testing.T) {
	state := t.TempDir()
	be, err := OpenEmbedded(state)
	if err != nil {
		t.Fatal(err)
	}
	res, err := be.Setup(context.Background(), QueueSettings{Visibility: time.Second, MaxReceiveCount: 5})
	if err != nil {
		t.Fatal(err)
	}
	if err := be.Queue.SendBatch(context.Background(), res.FetchDLQ, []queue.Entry{{ID: "1", Body: "dead"}}); err != nil {
		t.Fatal(err)
	}
	be.Close()
	code, stdout, stderr := runMain(t, "redrive", "--state", state, "fetch")
	if code != ExitOK || !strings.Contains(stdout, "moved 1 messages") {
		t.Fatalf("redrive: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	be, err = OpenEmbedded(state)
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	if v, _, err := be.Queue.Depth(context.Background(), res.Fetch); err != nil || v != 1 {
		t.Errorf("the fetch queue holds %d visible messages (%v), want the redriven one", v, err)
	}
	if code, _, stderr := runMain(t, "redrive", "--state", state, "fecth"); code != ExitUsage || !strings.Contains(stderr, "unknown queue") {
		t.Errorf("a mistyped queue: exit %d, stderr %q", code, stderr)
	}
	// The render step's dead-letter queue too.
	if err := be.Queue.SendBatch(context.Background(), res.RenderDLQ, []queue.Entry{{ID: "1", Body: "dead"}}); err != nil {
		t.Fatal(err)
	}
	be.Close()
	if code, stdout, stderr := runMain(t, "redrive", "--state", state, "render"); code != ExitOK || !strings.Contains(stdout, "moved 1 messages") {
		t.Fatalf("redrive render: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// crawl run on the embedded backend gives the scheduler a spare processor for the threads its file
// syncs block, unless GOMAXPROCS says otherwise, and gives it back when done.
func TestSpareProcUnlessGOMAXPROCSIsSet(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	t.Setenv("GOMAXPROCS", "")
	os.Unsetenv("GOMAXPROCS")
	restore := spareProc()
	second := spareProc() // a second run in the same process shares the spare P
	if n := runtime.GOMAXPROCS(0); n != before+1 {
		t.Errorf("GOMAXPROCS during two runs = %d, want %d", n, before+1)
	}
	restore()
	restore()
	if n := runtime.GOMAXPROCS(0); n != before+1 {
		t.Errorf("GOMAXPROCS while the second run goes on = %d, want %d", n, before+1)
	}
	second()
	if n := runtime.GOMAXPROCS(0); n != before {
		t.Errorf("GOMAXPROCS after the run = %d, want %d again", n, before)
	}
	t.Setenv("GOMAXPROCS", strconv.Itoa(before))
	restore = spareProc()
	if n := runtime.GOMAXPROCS(0); n != before {
		t.Errorf("GOMAXPROCS with the variable set = %d, want it left at %d", n, before)
	}
	restore()
}

// TestTheSummaryListsWhatWasGivenUp: `crawl run` on a site with a page that answers 503 to every
// request requests it --max-tries times, finishes, and its summary names the page, its class and
// why, in the text and in the JSON.
func TestTheSummaryListsWhatWasGivenUp(t *testing.T) {
	site := e2etest.NewSite(t, 12, 3)
	site.Unavailable(5, 1<<30)
	seeds := writeFile(t, "seeds.txt", strings.Join(site.PageURLs(), "\n")+"\n")
	code, stdout, stderr := runMain(t, "run", "--state", t.TempDir(), "--allow-net", "127.0.0.0/8", "--host-rps", "0",
		"--max-tries", "2", "--retry-wait", "10ms", "--quiet", "--json", seeds)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if n := site.Refused(); n != 2 {
		t.Errorf("the failing page was requested %d times, want 2 (--max-tries)", n)
	}
	s := lastJSON(t, stdout)
	if !s.Finished || s.Failed != 1 || len(s.GaveUp) != 1 || s.GaveUp[0].URL != site.PageURL(5) ||
		s.GaveUp[0].Class != "http_5xx" || !strings.Contains(s.GaveUp[0].Detail, "503") {
		t.Errorf("summary = %+v, want finished with %s given up as http_5xx, status 503", s, site.PageURL(5))
	}
	if !strings.Contains(stderr, "given up:") || !strings.Contains(stderr, strconv.Quote(site.PageURL(5))) {
		t.Errorf("the text summary (on stderr with --json) does not list the page given up:\n%s", stderr)
	}
}

// TestTheSameCommandWithTheFixCrawls follows a newcomer after a refused seed: the same command
// with --allow-net crawls (the ended crawl fetched nothing), the same command once more says the
// crawl has ended and names --fresh, and --fresh fetches the site again. The site counts what it
// served: the oracle for what each run did.
func TestTheSameCommandWithTheFixCrawls(t *testing.T) {
	site, seeds := demoSeeds(t, 3, 2, 500)
	dir := t.TempDir()
	if code, _, stderr := runBin(t, dir, nil, "run", "--state", "st", seeds); code != ExitFailed {
		t.Fatalf("without --allow-net: exit %d, want %d\n%s", code, ExitFailed, stderr)
	}
	allowed := []string{"run", "--state", "st", "--allow-net", "127.0.0.0/8", "--host-rps", "0", seeds}
	code, _, stderr := runBin(t, dir, nil, allowed...)
	if code != ExitOK || site.Fetched() != 3 || !strings.Contains(stderr, "ended without fetching a page; starting it again") {
		t.Fatalf("with --allow-net: exit %d, %d pages served, want 0 and 3, and the restart said\n%s", code, site.Fetched(), stderr)
	}
	code, stdout, stderr := runBin(t, dir, nil, allowed...)
	if code != ExitOK || !strings.Contains(stderr, "already ended") || !strings.Contains(stderr, "--fresh") ||
		!strings.Contains(stdout, "had already ended") {
		t.Errorf("once more: exit %d, want 0, and that the crawl has ended and --fresh\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if n := len(site.Repeats()); n != 0 {
		t.Errorf("a run of an ended crawl fetched %d pages again", n)
	}
	code, _, stderr = runBin(t, dir, nil, append([]string{"run", "--fresh"}, allowed[1:]...)...)
	if code != ExitOK || len(site.Repeats()) != 3 || !strings.Contains(stderr, "--fresh starts it again") {
		t.Errorf("--fresh: exit %d, %d pages served again, want 0 and 3\n%s", code, len(site.Repeats()), stderr)
	}
}

// TestWhichCrawlRunsIsSaid interrupts a crawl, adds a comment to its seed file and runs it again:
// the run must say it resumes the same crawl and fetch no page twice. A second seed file then
// starts a new crawl while the first one's second file is unfinished: the run names both, and its
// summary covers both. --name pins a crawl whatever the file holds.
func TestWhichCrawlRunsIsSaid(t *testing.T) {
	site := demosite.New(120, 4, 500)
	srv := httptest.NewServer(site)
	defer srv.Close()
	dir := t.TempDir()
	seeds := filepath.Join(dir, "seeds.txt")
	if err := os.WriteFile(seeds, []byte(srv.URL+"/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "--state", "st", "--allow-net", "127.0.0.0/8", "--host-rps", "100", "--host-concurrency", "1", "--concurrency", "2",
		"--visibility", "2s", "--quiet", "--json", seeds}
	if code, _, stderr := interruptBin(t, dir, site, 10, args...); code != ExitInterrupted || !strings.Contains(stderr, "new crawl seeds-") {
		t.Fatalf("the first run: exit %d, want %d, and it names the new crawl\n%s", code, ExitInterrupted, stderr)
	}
	first := site.Fetched()
	if err := os.WriteFile(seeds, []byte("# my seeds\n\n  "+srv.URL+"/  \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := interruptBin(t, dir, site, first+10, args...)
	if code != ExitInterrupted || !strings.Contains(stderr, "resuming crawl seeds-") {
		t.Fatalf("after a comment was added: exit %d, and the run does not say it resumes\n%s", code, stderr)
	}
	resumed := lastJSON(t, stdout).Crawl

	site2 := demosite.New(5, 2, 500)
	srv2 := httptest.NewServer(site2)
	defer srv2.Close()
	other := filepath.Join(dir, "other.txt")
	if err := os.WriteFile(other, []byte(srv2.URL+"/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runBin(t, dir, nil, append(args[:len(args)-1:len(args)-1], other)...)
	if code != ExitOK {
		t.Fatalf("the other seed file: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "new crawl other-") || !strings.Contains(stderr, "unfinished crawl "+resumed+" is here too") {
		t.Errorf("the run does not name its new crawl and the unfinished %s:\n%s", resumed, stderr)
	}
	s := lastJSON(t, stdout)
	if s.Fetched != 5 || len(s.Also) != 1 || s.Also[0].Crawl != resumed || s.Also[0].Pending != 0 || s.Also[0].Fetched != 120 {
		t.Errorf("summary = %+v, want the 5 pages of the new crawl, and the resumed crawl in also with all 120 fetched", s)
	}
	if site.Fetched() != 120 || site2.Fetched() != 5 {
		t.Errorf("the sites served %d and %d pages, want 120 and 5", site.Fetched(), site2.Fetched())
	}
	if n := len(site.Repeats()); n > 4 {
		t.Errorf("%d pages were fetched twice; only the pages in flight at each interrupt (2 at most) may be", n)
	}

	named := append([]string{"run", "--name", "mine"}, args[1:]...)
	code, stdout, stderr = runBin(t, dir, nil, named...)
	if code != ExitOK || !strings.Contains(stderr, "new crawl mine-") {
		t.Fatalf("--name: exit %d\n%s", code, stderr)
	}
	id := lastJSON(t, stdout).Crawl
	named[len(named)-1] = other
	code, stdout, stderr = runBin(t, dir, nil, named...)
	if code != ExitOK || lastJSON(t, stdout).Crawl != id || !strings.Contains(stderr, "already ended") {
		t.Errorf("--name with another file: exit %d, crawl %s, want %s, ended\n%s", code, lastJSON(t, stdout).Crawl, id, stderr)
	}
}

// TestMaxPagesRefusesWithTheBudgetClass crawls a 60-page site with --max-pages 20: the links
// over it end with the class the docs name, budget (not scope), and the site serves at most 20
// pages (TestMaxPagesFetchesThatManyPages checks that it serves 20).
func TestMaxPagesRefusesWithTheBudgetClass(t *testing.T) {
	site, seeds := demoSeeds(t, 60, 6, 500)
	code, stdout, stderr := runBin(t, "", nil, "run", "--state", "st", "--allow-net", "127.0.0.0/8", "--host-rps", "0",
		"--max-pages", "20", "--json", seeds)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	s := lastJSON(t, stdout)
	if s.Classes["budget"] == 0 || s.Classes["scope"] != 0 {
		t.Errorf("classes %v: want the URLs over --max-pages as budget, none as scope", s.Classes)
	}
	if s.Fetched > 20 || site.Fetched() > 20 {
		t.Errorf("%d pages fetched and %d served, want at most 20", s.Fetched, site.Fetched())
	}
	if !strings.Contains(stderr, "--max-pages") {
		t.Errorf("the text summary (on stderr with --json) does not say that --max-pages stopped the crawl:\n%s", stderr)
	}
}

// TestJSONStdoutIsOneDocument runs crawl run and crawl demo with --json as a script does: stdout
// must be exactly one JSON document (json.Unmarshal refuses anything after it), and the text
// summary goes to stderr.
func TestJSONStdoutIsOneDocument(t *testing.T) {
	_, seeds := demoSeeds(t, 5, 2, 500)
	for name, args := range map[string][]string{
		"run":  {"run", "--state", "st", "--allow-net", "127.0.0.0/8", "--host-rps", "0", "--json", seeds},
		"demo": {"demo", "--pages", "5", "--", "--json"},
	} {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := runBin(t, "", nil, args...)
			if code != ExitOK {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			var doc map[string]any
			if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
				t.Fatalf("stdout is not one JSON document: %v\n%s", err, stdout)
			}
			if doc["fetched"] != float64(5) {
				t.Errorf("the document says %v fetched, want 5", doc["fetched"])
			}
			if !strings.Contains(stderr, "fetched 5") {
				t.Errorf("stderr does not hold the text summary:\n%s", stderr)
			}
		})
	}
}

// TestAGrowingSeedFileExtendsItsCrawl interrupts a crawl, appends a line (another site's root) to
// its seed file and runs it again: the run says the crawl takes in the new line, keeps the
// crawl's id, fetches the new site and no page of the first again beyond those in flight at the
// interrupt. Once that crawl has ended, another line starts a crawl of its own.
func TestAGrowingSeedFileExtendsItsCrawl(t *testing.T) {
	site, site2, site3 := demosite.New(120, 4, 500), demosite.New(5, 2, 500), demosite.New(3, 2, 500)
	var urls []string
	for _, s := range []*demosite.Site{site, site2, site3} {
		srv := httptest.NewServer(s)
		defer srv.Close()
		urls = append(urls, srv.URL+"/")
	}
	dir := t.TempDir()
	seeds := filepath.Join(dir, "seeds.txt")
	write := func(lines ...string) {
		t.Helper()
		if err := os.WriteFile(seeds, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"run", "--state", "st", "--allow-net", "127.0.0.0/8", "--host-rps", "100", "--host-concurrency", "1", "--concurrency", "2",
		"--visibility", "2s", "--quiet", "--json", seeds}
	write(urls[0])
	if code, _, stderr := interruptBin(t, dir, site, 10, args...); code != ExitInterrupted || !strings.Contains(stderr, "new crawl seeds-") {
		t.Fatalf("the first run: exit %d, want %d, and it names the new crawl\n%s", code, ExitInterrupted, stderr)
	}
	write(urls[0], urls[1])
	code, stdout, stderr := runBin(t, dir, nil, args...)
	if code != ExitOK || !strings.Contains(stderr, "the crawl takes in its new lines") {
		t.Fatalf("after a line was appended: exit %d, and the run does not say it extends the crawl\n%s", code, stderr)
	}
	first := lastJSON(t, stdout)
	if !strings.Contains(stderr, "crawl "+first.Crawl+" had not ended") {
		t.Errorf("the run names another crawl than its summary's %s:\n%s", first.Crawl, stderr)
	}
	if first.Fetched != 125 || site.Fetched() != 120 || site2.Fetched() != 5 {
		t.Errorf("the crawl fetched %d pages, the sites served %d and %d; want 125: 120 and 5", first.Fetched, site.Fetched(), site2.Fetched())
	}
	if n := len(site.Repeats()); n > 2 {
		t.Errorf("%d pages of the first site were fetched twice; only those in flight at the interrupt (2 at most) may be", n)
	}

	write(urls[0], urls[1], urls[2])
	code, stdout, stderr = runBin(t, dir, nil, args...)
	if code != ExitOK || !strings.Contains(stderr, "new crawl seeds-") || lastJSON(t, stdout).Crawl == first.Crawl {
		t.Fatalf("a line appended after the crawl ended: exit %d, crawl %s; want a new crawl\n%s", code, lastJSON(t, stdout).Crawl, stderr)
	}
	if site3.Fetched() != 3 {
		t.Errorf("the third site served %d pages, want 3", site3.Fetched())
	}
}
