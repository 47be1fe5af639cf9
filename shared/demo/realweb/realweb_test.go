package realweb

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

var href = regexp.MustCompile(`<a [^>]*href="([^"]+)"`)

// TestPagesLookLikeRealHTML reads pages of the default web from its hosts, big and small, with a
// plain client: each is 30 to 150 KB, gzips 4 to 8 times smaller (as real HTML does, and filler
// does not: the wide crawl's 20 KB pages gzip about 20 times), holds many distinct words, and has
// about 100 links, about half of them to other hosts, some of those to the hosts outside the web.
func TestPagesLookLikeRealHTML(t *testing.T) {
	w, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	client := &http.Client{Timeout: 10 * time.Second}
	var raw, zipped int
	for _, h := range []int{0, 1, 7, 50, 333, 998} {
		if w.Slow(h) {
			t.Fatalf("host %d is slow: pick another", h)
		}
		for _, p := range []int{0, 1, 2} {
			if p >= w.sizes[h] {
				continue
			}
			u := strings.TrimSuffix(w.Roots[h], "/") + Path(p)
			resp, err := client.Get(u)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
				t.Fatalf("GET %s: %d %s", u, resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			if len(body) < 30_000 || len(body) > 150_000 {
				t.Errorf("%s: %d bytes, want 30 to 150 KB", u, len(body))
			}
			var z bytes.Buffer
			g := gzip.NewWriter(&z)
			g.Write(body)
			g.Close()
			if r := float64(len(body)) / float64(z.Len()); r < 4 || r > 8 {
				t.Errorf("%s: gzips %.2f times smaller, want 4 to 8", u, r)
			}
			raw, zipped = raw+len(body), zipped+z.Len()
			words := map[string]bool{}
			for _, f := range strings.Fields(string(body)) {
				words[f] = true
			}
			if len(words) < 1_000 {
				t.Errorf("%s: %d distinct words, want a varied page", u, len(words))
			}
			self, _ := url.Parse(u)
			var links, off, out int
			for _, m := range href.FindAllStringSubmatch(string(body), -1) {
				l, err := url.Parse(m[1])
				if err != nil {
					t.Fatalf("%s: link %q: %v", u, m[1], err)
				}
				if !l.IsAbs() {
					continue // the logo, the byline: the host's own
				}
				links++
				if l.Host != self.Host {
					off++
				}
				if strings.HasPrefix(l.Hostname(), "127.0.250.") {
					out++
				}
			}
			if links < 90 || links > 110 || off < links*4/10 || off > links*6/10 || out < 5 {
				t.Errorf("%s: %d links, %d off-site, %d out of the web: want about 100, half off-site, some out", u, links, off, out)
			}
		}
	}
	if r := float64(raw) / float64(zipped); r < 4 || r > 8 {
		t.Errorf("the pages gzip %.2f times smaller in all, want 4 to 8", r)
	}
}

// TestSizesFollowZipf checks the hosts' page counts: decreasing, at least one each, summing to
// about Pages, the largest host at least a tenth of the web and its count Pages/H (H the harmonic
// number of 1,000, about 7.485), the k-th about the largest's k-th part.
func TestSizesFollowZipf(t *testing.T) {
	s := Sizes(Options{Hosts: 1000, Pages: 4000, Zipf: 1})
	total := 0
	for _, n := range s {
		total += n
	}
	if !slices.IsSortedFunc(s, func(a, b int) int { return b - a }) || s[len(s)-1] < 1 {
		t.Errorf("sizes not decreasing to at least 1: %v ... %v", s[:5], s[len(s)-5:])
	}
	if total < 4000 || total > 4400 {
		t.Errorf("%d pages in all, want about 4,000", total)
	}
	if s[0] != 534 || s[9] != 53 || 10*s[0] < total {
		t.Errorf("largest %d, tenth %d of %d pages: want 534 (4000/7.485), 53, and at least a tenth", s[0], s[9], total)
	}
}

// TestLatencyHasALongTail draws the answer time of 20,000 paths: its median is about 200 ms and
// its 99th percentile about 3 s, and none passes the cap.
func TestLatencyHasALongTail(t *testing.T) {
	w := &Web{opts: Defaults()}
	var d []time.Duration
	for i := 0; i < 20_000; i++ {
		d = append(d, w.latency(i%1000, Path(i)))
	}
	slices.Sort(d)
	med, p99 := d[len(d)/2], d[len(d)*99/100]
	if med < 180*time.Millisecond || med > 220*time.Millisecond {
		t.Errorf("median %v, want about 200 ms", med)
	}
	if p99 < 2500*time.Millisecond || p99 > 3500*time.Millisecond {
		t.Errorf("99th percentile %v, want about 3 s", p99)
	}
	if d[len(d)-1] > w.opts.MaxLatency {
		t.Errorf("longest %v, over the cap %v", d[len(d)-1], w.opts.MaxLatency)
	}
	if w.latency(3, "/p/9") != w.latency(3, "/p/9") {
		t.Error("the same request takes a different time: not seeded")
	}
}

// TestServesEachHostOnItsOwnAddress serves 300 hosts (past 127.0.1.250, onto 127.0.2.N), and checks
// robots.txt, a page, a missing page, a slow host, the count of pages fetched, and that a
// connection to a host outside the web is refused and counted.
func TestServesEachHostOnItsOwnAddress(t *testing.T) {
	w, err := Start(Options{Hosts: 300, Pages: 900, Median: time.Millisecond, P99: 2 * time.Millisecond,
		MaxLatency: 5 * time.Millisecond, SlowHosts: 2, Slow: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if got := w.Roots[260]; !strings.HasPrefix(got, "http://127.0.2.11:") {
		t.Fatalf("host 260 at %s, want 127.0.2.11", got)
	}
	client := &http.Client{Timeout: 500 * time.Millisecond}
	get := func(u string) (int, string) {
		t.Helper()
		resp, err := client.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get(w.Roots[260] + "robots.txt")
	if code != 200 || !strings.Contains(body, "Disallow: /search") {
		t.Errorf("robots.txt: %d %q", code, body)
	}
	if _, other := get(w.Roots[261] + "robots.txt"); other == body || !strings.Contains(other, "Disallow: /search") {
		t.Errorf("host 261's robots.txt %q, want one of its own that disallows /search too (host 260's: %q)", other, body)
	}
	if code, body := get(w.Roots[260]); code != 200 || !strings.Contains(body, `rel="canonical" href="`+w.Roots[260]+`"`) {
		t.Errorf("host 260's root: %d, or not its own canonical", code)
	}
	get(w.Roots[260]) // twice
	before := time.Now()
	get(w.Roots[0] + "p/1")
	get(w.Roots[0] + "p/2")
	after := time.Now()
	if code, _ := get(w.Roots[0] + "p/100000"); code != 404 {
		t.Errorf("a missing page: %d, want 404", code)
	}
	if pages, twice := w.Fetched(); pages != 3 || twice != 1 {
		t.Errorf("fetched %d pages, %d twice: want 3 and 1", pages, twice)
	}
	if sp := w.SpanOf(0); sp.Requests != 2 || sp.First.Before(before) || sp.Last.After(after) || sp.Last.Before(sp.First) {
		t.Errorf("host 0's span %+v: want its 2 pages, between %v and %v", sp, before, after)
	}
	if got := w.Twice(10); !slices.Equal(got, []string{"260/: 2"}) {
		t.Errorf("Twice = %q, want host 260's root, served twice", got)
	}
	slow := -1
	for h := range 300 {
		if w.Slow(h) {
			slow = h
		}
	}
	if slow < 150 {
		t.Fatalf("slow host %d: want one of the smaller half", slow)
	}
	var ne net.Error
	if code, _ := get(w.Roots[slow] + "robots.txt"); code != 200 {
		t.Errorf("slow host %d's robots.txt: %d, want it in time", slow, code)
	}
	if _, err := client.Get(w.Roots[slow]); !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("slow host %d answered within 500 ms: %v", slow, err)
	}
	if _, err := client.Get(w.out[0] + "/x"); err == nil {
		t.Error("a host outside the web answered")
	}
	for deadline := time.Now().Add(5 * time.Second); w.Unscoped() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the connection to a host outside the web was not counted")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestBadOptions are refused with a reason.
func TestBadOptions(t *testing.T) {
	for _, o := range []Options{{Hosts: MaxHosts + 1}, {Hosts: 10, Pages: 5}, {Links: 5}, {MinBytes: 200_000}, {SlowHosts: 900}} {
		if _, err := Start(o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}
