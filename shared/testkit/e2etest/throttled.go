package e2etest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// throttledJSON is what the checks read of the throttled hosts in a summary or status (--json).
type throttledJSON struct {
	Throttled []struct {
		Host            string  `json:"host"`
		GapSeconds      float64 `json:"gapSeconds"`
		RaisedToSeconds float64 `json:"raisedToSeconds"`
		Raises          int64   `json:"raises"`
		Why             string  `json:"why"`
	} `json:"throttled"`
}

// CheckThrottledHostsShown crawls a small site on loopback whose /busy page answers 429 to its
// first two requests, with `crawl run --json` and runFlags, then reads `crawl status` with
// adminFlags (both choose the backend). The summary and the status name the site's host as
// throttled, widened at least once and at most once per 429 the site served (the site's own count
// is the oracle), to a gap of at least the least throttled gap; the text of status lists it too.
func CheckThrottledHostsShown(t testing.TB, main MainFunc, runFlags, adminFlags []string) {
	t.Helper()
	var requests, served429 atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<html><body><a href="/a">a</a> <a href="/busy">busy</a> <a href="/b">b</a></body></html>`)
	})
	mux.HandleFunc("/busy", func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) <= 2 {
			served429.Add(1)
			w.Header().Set("Retry-After", "1")
			http.Error(w, "slow down", http.StatusTooManyRequests)
			return
		}
		fmt.Fprint(w, "<html><body>busy, now served</body></html>")
	})
	for _, p := range []string{"/a", "/b"} {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "<html><body>page</body></html>") })
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	seeds := filepath.Join(t.TempDir(), "seeds.txt")
	if err := os.WriteFile(seeds, []byte(srv.URL+"/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append(append([]string{"run", "--json", "--quiet", "--allow-net", "127.0.0.0/8"}, runFlags...), seeds)
	var sum struct {
		Fetched int64 `json:"fetched"`
		throttledJSON
	}
	var st throttledJSON
	text := runThenStatus(t, main, args, adminFlags, &sum, &st)
	if sum.Fetched != 4 || served429.Load() != 2 {
		t.Fatalf("the crawl fetched %d pages and the site served %d 429s; want 4 pages after 2 429s", sum.Fetched, served429.Load())
	}
	checkThrottled(t, "the summary", sum.throttledJSON, host, served429.Load())
	checkThrottled(t, "status", st, host, served429.Load())
	for where, out := range map[string]string{"the summary": text.run, "crawl status": text.status} {
		if !strings.Contains(out, "hosts throttled after their 429s, failures in a row or slow answers") || !strings.Contains(out, host) {
			t.Errorf("the text of %s does not list %s as throttled:\n%s", where, host, out)
		}
	}
}

// texts are what a run and crawl status print for people.
type texts struct{ run, status string }

// runThenStatus runs main with args (a `crawl run --json`) and reads its summary, the last line of
// its output, into sum; then `crawl status --json` of the crawl it ran, with adminFlags, into st.
// It returns the text of the run (stderr) and of `crawl status`. A run or status that fails, or
// output that is not JSON, fails the test.
func runThenStatus(t testing.TB, main MainFunc, args, adminFlags []string, sum, st any) texts {
	t.Helper()
	code, stdout, stderr := main(args...)
	if code != 0 {
		t.Fatalf("crawl %s: exit %d\nstdout %s\nstderr %s", strings.Join(args, " "), code, stdout, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var id struct {
		Crawl string `json:"crawl"`
	}
	last := []byte(lines[len(lines)-1])
	if err := errors.Join(json.Unmarshal(last, sum), json.Unmarshal(last, &id)); err != nil {
		t.Fatalf("the summary is not JSON: %v\n%s", err, stdout)
	}
	out := texts{run: stderr}
	code, stdout, stderr = main(append(append([]string{"status"}, adminFlags...), "--json", id.Crawl)...)
	if code != 0 {
		t.Fatalf("crawl status --json: exit %d\n%s%s", code, stdout, stderr)
	}
	if err := json.Unmarshal([]byte(stdout), st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, stdout)
	}
	code, out.status, stderr = main(append(append([]string{"status"}, adminFlags...), id.Crawl)...)
	if code != 0 {
		t.Errorf("crawl status: exit %d\n%s%s", code, out.status, stderr)
	}
	return out
}

// checkThrottled checks that the one throttled host is host, widened once per 429 at most.
func checkThrottled(t testing.TB, where string, got throttledJSON, host string, served int64) {
	t.Helper()
	if len(got.Throttled) != 1 {
		t.Fatalf("%s lists %d throttled hosts (%+v), want %s", where, len(got.Throttled), got.Throttled, host)
	}
	h := got.Throttled[0]
	if h.Host != host || h.Raises < 1 || h.Raises > served || h.RaisedToSeconds < 0.25 || h.GapSeconds > h.RaisedToSeconds || h.Why != "429" {
		t.Errorf("%s: throttled host %+v; want %s widened 1 to %d times to at least 0.25s for its 429s, its gap now no wider", where, h, host, served)
	}
}
