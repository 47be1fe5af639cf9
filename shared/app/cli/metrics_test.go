package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/crawlstack/crawlstack/shared/observe/metrics"
	"github.com/crawlstack/crawlstack/shared/observe/telemetry"
)

// emfPoint is one metric value of one EMF line, with the line's dimensions.
type emfPoint struct {
	dims  map[string]string
	value []float64 // a single value, or a histogram's values
}

// decodeEMF checks every line is an EMF document whose declared metrics and dimensions are
// present, and returns the values by metric name.
func decodeEMF(t *testing.T, out string) map[string][]emfPoint {
	t.Helper()
	got := map[string][]emfPoint{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &doc); err != nil {
			t.Fatalf("not a JSON line: %v: %s", err, sc.Text())
		}
		var meta struct {
			Timestamp         int64
			CloudWatchMetrics []struct {
				Namespace  string
				Dimensions [][]string
				Metrics    []struct{ Name, Unit string }
			}
		}
		if err := json.Unmarshal(doc["_aws"], &meta); err != nil || meta.Timestamp == 0 || len(meta.CloudWatchMetrics) != 1 {
			t.Fatalf("no EMF metadata (%v): %s", err, sc.Text())
		}
		d := meta.CloudWatchMetrics[0]
		if d.Namespace != telemetry.Namespace || len(d.Dimensions) != 1 {
			t.Fatalf("namespace %q, dimensions %v: %s", d.Namespace, d.Dimensions, sc.Text())
		}
		dims := map[string]string{}
		for _, name := range d.Dimensions[0] {
			var v string
			if err := json.Unmarshal(doc[name], &v); err != nil {
				t.Fatalf("dimension %s is not a string field: %s", name, sc.Text())
			}
			dims[name] = v
		}
		for _, m := range d.Metrics {
			var one float64
			var many []float64
			if err := json.Unmarshal(doc[m.Name], &one); err == nil {
				many = []float64{one}
			} else if err := json.Unmarshal(doc[m.Name], &many); err != nil {
				t.Fatalf("metric %s has no numeric value: %s", m.Name, sc.Text())
			}
			got[m.Name] = append(got[m.Name], emfPoint{dims, many})
		}
	}
	return got
}

// sum adds the values of metric name whose dimensions include want.
func sum(points []emfPoint, want map[string]string) (total float64, n int) {
	for _, p := range points {
		match := true
		for k, v := range want {
			match = match && p.dims[k] == v
		}
		if match {
			for _, v := range p.value {
				total += v
				n++
			}
		}
	}
	return total, n
}

// TestEMFLinesCountAKnownCrawl crawls a site of known shape with metrics going out as EMF lines,
// decodes the lines, and finds each count the site's shape and its own request log give: in the
// lines, or in the breakdown the ledger's line carries (the terminal pages, the bytes fetched, the
// URLs admitted).
func TestEMFLinesCountAKnownCrawl(t *testing.T) {
	var emf bytes.Buffer
	tel, err := telemetry.Setup(context.Background(), func(string) string { return "" },
		telemetry.Options{EMF: &emf})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())

	// The site: / links to /a, /b, /missing (404) and /private (disallowed); /a links back to / and
	// /b to /a (two links to known URLs). The server counts what it serves.
	var mu sync.Mutex
	served := map[string]int{}
	var bodyBytes int
	page := func(w http.ResponseWriter, r *http.Request, body string) {
		mu.Lock()
		served[r.URL.Path]++
		bodyBytes += len(body)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, body)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		page(w, r, "User-agent: *\nDisallow: /private\n")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			page(w, r, `<a href="/a">a</a><a href="/b">b</a><a href="/missing">m</a><a href="/private">p</a>`)
		case "/a":
			page(w, r, `<a href="/">home</a>`)
		case "/b":
			page(w, r, `<a href="/a">a</a>`)
		default:
			mu.Lock()
			served[r.URL.Path]++
			mu.Unlock()
			http.NotFound(w, r)
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	s := crawlSite(t, srv.URL)
	if err := tel.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := decodeEMF(t, emf.String())

	mu.Lock()
	defer mu.Unlock()
	pageRequests := served["/"] + served["/a"] + served["/b"] + served["/missing"]
	if _, n := sum(got["crawl.fetch.duration"], nil); n != pageRequests+served["/robots.txt"] {
		t.Errorf("crawl.fetch.duration has %d values, want one per request (%d)", n, pageRequests+served["/robots.txt"])
	}
	// The breakdowns the metrics leave out, which the ledger's line carries on Lambda.
	b := metrics.TakeBreakdown()
	for _, c := range []struct {
		group, key string
		want       float64
	}{
		// 3 fetched, 1 failed with a 404 (the link robots.txt disallows is refused by parse).
		{"pages", "fetched", 3}, {"pages", "skipped_robots", 0}, {"pages", "failed_http_4xx", 1}, {"pages", "terminal", 4},
		{"refusals", "robots", 1},
		{"fetches", "page_ok", float64(pageRequests - served["/missing"])},
		{"fetches", "page_http_4xx", float64(served["/missing"])},
		{"fetches", "robots_ok", float64(served["/robots.txt"])},
		{"admission", "admitted", 4},
		{"fetches", "bytes", float64(bodyBytes + 19)}, // + the 404 body, "404 page not found\n"
	} {
		if got := b[c.group][c.key]; got != c.want {
			t.Errorf("breakdown %s.%s = %v, want %v (all: %v)", c.group, c.key, got, c.want, b)
		}
	}
	if terminal := b["pages"]["terminal"]; int64(terminal) != s.Fetched+s.Skipped+s.Failed {
		t.Errorf("breakdown pages.terminal = %v, the summary's terminal URLs %d", terminal, s.Fetched+s.Skipped+s.Failed)
	}
	if known := b["admission"]["known_memory"] + b["admission"]["known_table"]; known != 2 {
		t.Errorf("breakdown: %v links known, want 2 (all: %v)", known, b["admission"])
	}
	if len(b["message_age"]) != 3 {
		t.Errorf("breakdown: message ages %v, want one for each of the three queues", b["message_age"])
	}
	// Bytes, admissions and requeues are in the breakdown only: no series (issue 43).
	for name := range got {
		if !slices.Contains(metrics.Series, name) {
			t.Errorf("the EMF lines write %s, which is not one of metrics.Series %v", name, metrics.Series)
		}
	}
	for name, points := range got {
		for _, p := range points {
			if len(p.dims) != 0 {
				t.Errorf("%s has dimensions %v, want none", name, p.dims)
			}
		}
	}
}
