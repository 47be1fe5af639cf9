package cli

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/demo/demosite"
	"github.com/crawlstack/crawlstack/shared/testkit/e2etest"
)

// TestStatusPauseResumeStopEmbedded crawls a site, a missing page and a page robots.txt disallows to their end, then drives
// crawl failures, status, pause, resume and stop on its state directory (shared/testkit/awse2e does the same with --backend aws).
func TestStatusPauseResumeStopEmbedded(t *testing.T) {
	site := demosite.New(12, 3, 500)
	srv := httptest.NewServer(site)
	defer srv.Close()
	state := t.TempDir()
	// /private/secret, which robots.txt disallows, is a seed: a link to it is refused by parse
	// before its admission, and never becomes a URL that crawl failures lists.
	seeds := writeFile(t, "seeds.txt", srv.URL+"/\n"+srv.URL+"/no-such-page\n"+srv.URL+"/private/secret\n")
	code, stdout, stderr := runMain(t, "run", "--state", state, "--allow-net", "127.0.0.0/8", "--host-rps", "0", "--json", "--quiet", seeds)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	s := lastJSON(t, stdout)
	main := func(args ...string) (int, string, string) { return runMain(t, args...) }
	e2etest.CheckFailuresCommand(t, main, s.Crawl, map[string]string{
		srv.URL + "/private/secret": "robots", srv.URL + "/no-such-page": "http_4xx"}, "--state", state)
	e2etest.CheckAdminCommands(t, main, s.Crawl, s.Fetched, "--state", state)
}

// TestRedriveByClassEmbedded: crawl redrive --class on the embedded backend (shared/testkit/awse2e runs
// the same check on the emulators).
func TestRedriveByClassEmbedded(t *testing.T) {
	state := t.TempDir()
	be, err := OpenEmbedded(state)
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	res, err := be.Setup(context.Background(), QueueSettings{Visibility: 30 * time.Second, MaxReceiveCount: 5})
	if err != nil {
		t.Fatal(err)
	}
	main := func(args ...string) (int, string, string) { return runMain(t, args...) }
	e2etest.CheckRedriveByClass(t, main, be.Queue, be.Table, res.Fetch, res.FetchDLQ, "--state", state)
}

// TestThrottledHostsShownEmbedded: a host that answered 429 is listed, with its gap, in the
// summary of crawl run and in crawl status (shared/testkit/awse2e runs the same check with --backend aws).
func TestThrottledHostsShownEmbedded(t *testing.T) {
	state := t.TempDir()
	main := func(args ...string) (int, string, string) { return runMain(t, args...) }
	e2etest.CheckThrottledHostsShown(t, main, []string{"--state", state, "--host-rps", "0"}, []string{"--state", state})
}

// TestOptOutEmbedded: URLs on the opt-out list are never requested and end skipped, opted_out
// (shared/testkit/awse2e runs the same check with --backend aws).
func TestOptOutEmbedded(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state") // made by crawl optout add, before any crawl
	main := func(args ...string) (int, string, string) { return runMain(t, args...) }
	e2etest.CheckOptOut(t, main, []string{"--state", state, "--host-rps", "0"}, []string{"--state", state})
}

// TestCircuitOpensAndClosesEmbedded: a host that fails for a few seconds opens its circuit, its
// URLs wait without requests until a probe answers, and the summary and status show it (shared/testkit/awse2e
// runs the same check with --backend aws).
func TestCircuitOpensAndClosesEmbedded(t *testing.T) {
	state := t.TempDir()
	main := func(args ...string) (int, string, string) { return runMain(t, args...) }
	e2etest.CheckCircuitOpensAndCloses(t, main, 4, []string{"--state", state, "--host-rps", "0"}, []string{"--state", state})
}
