package e2etest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// CircuitFailures and CircuitProbe are the circuit settings CheckCircuitOpensAndCloses runs with.
const (
	CircuitFailures = 3
	CircuitProbe    = time.Second
)

// downSite is a site on loopback whose root links to pages pages; every page answers 503 from
// the first page request on, for downFor by the site's own clock, and then the page. Its log of
// failed requests is the test's oracle.
type downSite struct {
	srv     *httptest.Server
	downFor time.Duration
	mu      sync.Mutex
	down    time.Time   // when the first page request came (zero: none yet)
	failed  []time.Time // the page requests answered 503
	served  map[string]int
}

func newDownSite(t testing.TB, pages int, downFor time.Duration) *downSite {
	s := &downSite{downFor: downFor, served: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		b.WriteString("<html><body>")
		for i := range pages {
			fmt.Fprintf(&b, `<a href="/p/%d">%d</a> `, i, i)
		}
		b.WriteString("</body></html>")
		fmt.Fprint(w, b.String())
	})
	mux.HandleFunc("/p/", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		now := time.Now()
		if s.down.IsZero() {
			s.down = now
		}
		failing := now.Sub(s.down) < s.downFor
		if failing {
			s.failed = append(s.failed, now)
		} else {
			s.served[r.URL.Path]++
		}
		s.mu.Unlock()
		if failing {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "<html><body>page</body></html>")
	})
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.srv.Close)
	return s
}

// circuitJSON is what the checks read of the circuits in a summary or status (--json).
type circuitJSON struct {
	Circuits []struct {
		Host     string     `json:"host"`
		Open     bool       `json:"open"`
		Opens    int64      `json:"opens"`
		ClosedAt *time.Time `json:"closedAt"`
	} `json:"circuits"`
}

// CheckCircuitOpensAndCloses crawls a site on loopback of 30 pages that all answer 503 for the
// first 6 s after the first page request, with `crawl run --json`, CircuitFailures and
// CircuitProbe, and runFlags (which choose the backend and must set --concurrency); then reads
// `crawl status` with adminFlags. The crawl fetches every page once the site is back. The site's
// own log bounds the requests it failed: the failures that open the circuit, those in flight
// then (concurrency), and one probe per CircuitProbe of the time it was down, far fewer than its
// 30 pages. The summary and status show the host's circuit opened and closed again by a probe.
func CheckCircuitOpensAndCloses(t testing.TB, main MainFunc, concurrency int, runFlags, adminFlags []string) {
	t.Helper()
	const pages = 30
	site := newDownSite(t, pages, 6*time.Second)
	host := strings.TrimPrefix(site.srv.URL, "http://")
	seeds := filepath.Join(t.TempDir(), "seeds.txt")
	if err := os.WriteFile(seeds, []byte(site.srv.URL+"/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"run", "--json", "--quiet", "--allow-net", "127.0.0.0/8", "--concurrency", fmt.Sprint(concurrency),
		"--host-concurrency", fmt.Sprint(concurrency), "--circuit-failures", fmt.Sprint(CircuitFailures), "--circuit-probe", CircuitProbe.String(), "--retry-wait", "1s"}, runFlags...)
	var sum struct {
		Fetched int64 `json:"fetched"`
		circuitJSON
	}
	var st circuitJSON
	text := runThenStatus(t, main, append(args, seeds), adminFlags, &sum, &st)

	site.mu.Lock()
	failed, served := append([]time.Time(nil), site.failed...), len(site.served)
	site.mu.Unlock()
	if sum.Fetched != pages+1 || served != pages {
		t.Errorf("the crawl fetched %d pages and the site served %d of its %d after it was back; want all of them, and the root",
			sum.Fetched, served, pages)
	}
	if len(failed) < CircuitFailures {
		t.Fatalf("the site failed %d requests, want at least %d: it went down too late to test the circuit", len(failed), CircuitFailures)
	}
	span := failed[len(failed)-1].Sub(failed[0])
	bound := CircuitFailures + concurrency + int(span/CircuitProbe) + 1
	t.Logf("the site failed %d requests over %v (bound %d), and served %d pages", len(failed), span.Round(time.Millisecond), bound, served)
	if len(failed) > bound || len(failed) >= pages {
		t.Errorf("the site failed %d requests over %v while it was down; want at most %d (%d failures in a row, %d in flight, a probe per %v)"+
			" and fewer than its %d pages", len(failed), span.Round(time.Millisecond), bound, CircuitFailures, concurrency, CircuitProbe, pages)
	}
	checkCircuit(t, "the summary", sum.circuitJSON, host)
	checkCircuit(t, "status", st, host)
	if !strings.Contains(text.run, "hosts whose circuit opened") || !strings.Contains(text.run, host) {
		t.Errorf("the summary's text does not list %s's circuit:\n%s", host, text.run)
	}
	if !strings.Contains(text.status, "hosts whose circuit opened") || !strings.Contains(text.status, "closed by a probe") {
		t.Errorf("crawl status's text does not show %s's circuit closed:\n%s", host, text.status)
	}
}

// checkCircuit checks that the one host whose circuit opened is host, and that a probe closed it.
func checkCircuit(t testing.TB, where string, got circuitJSON, host string) {
	t.Helper()
	if len(got.Circuits) != 1 {
		t.Fatalf("%s lists %d circuits (%+v), want %s's", where, len(got.Circuits), got.Circuits, host)
	}
	if c := got.Circuits[0]; c.Host != host || c.Opens < 1 || c.Open || c.ClosedAt == nil {
		t.Errorf("%s: circuit %+v; want %s's, opened at least once and closed again", where, c, host)
	}
}
