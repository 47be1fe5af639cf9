package e2etest

import (
	"encoding/json"
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
	code, stdout, stderr := main(args...)
	if code != 0 {
		t.Fatalf("crawl %s: exit %d\nstdout %s\nstderr %s", strings.Join(args, " "), code, stdout, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var sum struct {
		Crawl   string `json:"crawl"`
		Fetched int64  `json:"fetched"`
		throttledJSON
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatalf("the summary is not JSON: %v\n%s", err, stdout)
	}
	if sum.Fetched != 4 || served429.Load() != 2 {
		t.Fatalf("the crawl fetched %d pages and the site served %d 429s; want 4 pages after 2 429s", sum.Fetched, served429.Load())
	}
	checkThrottled(t, "the summary", sum.throttledJSON, host, served429.Load())
	if !strings.Contains(stderr, "hosts throttled after their 429s, failures in a row or slow answers") || !strings.Contains(stderr, host) {
		t.Errorf("the summary's text does not list %s as throttled:\n%s", host, stderr)
	}

	code, stdout, stderr = main(append(append([]string{"status"}, adminFlags...), "--json", sum.Crawl)...)
	if code != 0 {
		t.Fatalf("crawl status --json: exit %d\n%s%s", code, stdout, stderr)
	}
	var st throttledJSON
	if err := json.Unmarshal([]byte(stdout), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, stdout)
	}
	checkThrottled(t, "status", st, host, served429.Load())
	code, stdout, stderr = main(append(append([]string{"status"}, adminFlags...), sum.Crawl)...)
	if code != 0 || !strings.Contains(stdout, "hosts throttled after their 429s, failures in a row or slow answers") || !strings.Contains(stdout, host) {
		t.Errorf("crawl status: exit %d, and its text does not list %s as throttled:\n%s%s", code, host, stdout, stderr)
	}
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
