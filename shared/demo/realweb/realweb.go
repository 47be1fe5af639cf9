// Package realweb serves a generated web that looks like the real one to a crawler's bill: a
// thousand or more hosts on loopback addresses (127.0.1.1, 127.0.1.2, ... 127.0.1.250, 127.0.2.1,
// ...), each with its own listener and robots.txt, whose page counts follow Zipf's law (a few big
// hosts, many of one or two pages); pages of 30 to 150 KB of varied HTML (a navigation bar,
// paragraphs, tables, inline styles and scripts, attributes) that gzip about as well as real
// pages do; about 100 links a page, half of them to other hosts, a share of those to hosts that
// no crawl of the web may fetch; and answers that take a long-tailed time (lognormal), with a few
// hosts slower than any sane fetch timeout.
//
// Everything is drawn from a seed, so a web is the same from run to run. The hosts that the
// out-of-scope links point at (127.0.250.N) are served by listeners that accept a connection,
// count it and close it: they serve nothing, and Unscoped tells whether a crawl reached them.
package realweb

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// MaxHosts is how many hosts a web may have: 250 to each of the addresses' third bytes 1 to 249.
const MaxHosts = 250 * 249

// Options shape the web. Zero fields take the defaults of Defaults.
type Options struct {
	// Hosts is how many hosts serve pages, one loopback address each (Addr).
	Hosts int
	// Pages is about how many pages there are in all: host k (from 1) gets Pages * k^-Zipf / H,
	// at least one, where H is the sum of k^-Zipf over the hosts (Sizes).
	Pages int
	// Zipf is the exponent of the hosts' sizes; 1 makes the largest of 1,000 hosts 13% of the pages.
	Zipf float64
	// Links is about how many links a page carries, and OffSite the share of them to other hosts.
	Links   int
	OffSite float64
	// OutOfScope is the share of the off-site links that point at hosts that are not the web's
	// (127.0.250.N: counted and closed, never served).
	OutOfScope float64
	// MinBytes and MaxBytes bound a page's size; MedianBytes is the median of the lognormal its
	// size is drawn from.
	MinBytes, MedianBytes, MaxBytes int
	// Median and P99 shape the lognormal time an answer takes, capped at MaxLatency.
	Median, P99, MaxLatency time.Duration
	// SlowHosts is how many hosts (from the smallest) take Slow to answer a page: set Slow above
	// the crawl's fetch timeout for hosts that time out. Their robots.txt answers in time, as a
	// static file in front of a slow application does (a robots.txt that times out makes a
	// crawler wait out its robots cache's error TTL between tries: package robots).
	SlowHosts int
	Slow      time.Duration
	// Seed draws the web: sizes of pages, links, words and answer times.
	Seed uint64
}

// Defaults are the options of a realistic crawl's web: 1,000 hosts, 4,000 pages with Zipf
// exponent 1, 100 links a page (half off-site, a fifth of those out of scope), pages of 30 to 150
// KB (median 70 KB), answers in a lognormal time of median 200 ms and 99th percentile 3 s (capped
// at 20 s), and 5 hosts that answer after 40 s.
func Defaults() Options {
	return Options{Hosts: 1000, Pages: 4000, Zipf: 1, Links: 100, OffSite: 0.5, OutOfScope: 0.2,
		MinBytes: 30_000, MedianBytes: 70_000, MaxBytes: 150_000,
		Median: 200 * time.Millisecond, P99: 3 * time.Second, MaxLatency: 20 * time.Second,
		SlowHosts: 5, Slow: 40 * time.Second, Seed: 1}
}

// withDefaults fills the zero fields of o from Defaults.
func (o Options) withDefaults() Options {
	d := Defaults()
	set := func(dst *int, v int) {
		if *dst == 0 {
			*dst = v
		}
	}
	set(&o.Hosts, d.Hosts)
	set(&o.Pages, d.Pages)
	set(&o.Links, d.Links)
	set(&o.MinBytes, d.MinBytes)
	set(&o.MedianBytes, d.MedianBytes)
	set(&o.MaxBytes, d.MaxBytes)
	for _, p := range []struct {
		dst *float64
		v   float64
	}{{&o.Zipf, d.Zipf}, {&o.OffSite, d.OffSite}, {&o.OutOfScope, d.OutOfScope}} {
		if *p.dst == 0 {
			*p.dst = p.v
		}
	}
	for _, p := range []struct {
		dst *time.Duration
		v   time.Duration
	}{{&o.Median, d.Median}, {&o.P99, d.P99}, {&o.MaxLatency, d.MaxLatency}, {&o.Slow, d.Slow}} {
		if *p.dst == 0 {
			*p.dst = p.v
		}
	}
	if o.Seed == 0 {
		o.Seed = d.Seed
	}
	return o
}

// check says what is wrong with o (after withDefaults).
func (o Options) check() error {
	var errs []error
	if o.Hosts < 1 || o.Hosts > MaxHosts {
		errs = append(errs, fmt.Errorf("hosts %d: want 1 to %d (one loopback address each)", o.Hosts, MaxHosts))
	}
	if o.Pages < o.Hosts {
		errs = append(errs, fmt.Errorf("pages %d: want at least one per host (%d hosts)", o.Pages, o.Hosts))
	}
	if o.Zipf < 0 {
		errs = append(errs, fmt.Errorf("zipf exponent %v: want 0 or more", o.Zipf))
	}
	if o.Links < 10 || o.OffSite < 0 || o.OffSite > 1 || o.OutOfScope < 0 || o.OutOfScope > 1 {
		errs = append(errs, fmt.Errorf("links %d, off-site share %v, out-of-scope share %v: want at least 10 links and shares from 0 to 1",
			o.Links, o.OffSite, o.OutOfScope))
	}
	if o.MinBytes < 4_000 || o.MinBytes > o.MedianBytes || o.MedianBytes > o.MaxBytes {
		errs = append(errs, fmt.Errorf("page sizes %d, %d, %d: want 4,000 <= min <= median <= max", o.MinBytes, o.MedianBytes, o.MaxBytes))
	}
	if o.Median <= 0 || o.P99 < o.Median || o.MaxLatency < o.Median {
		errs = append(errs, fmt.Errorf("latency median %v, p99 %v, cap %v: want 0 < median <= p99 and median <= cap", o.Median, o.P99, o.MaxLatency))
	}
	if o.SlowHosts < 0 || o.SlowHosts > o.Hosts/2 {
		errs = append(errs, fmt.Errorf("slow hosts %d: want 0 to half the hosts (%d)", o.SlowHosts, o.Hosts/2))
	}
	return errors.Join(errs...)
}

// Addr is the loopback address of host h (from 0): 127.0.1.1 to 127.0.1.250, then 127.0.2.1 on.
func Addr(h int) netip.Addr {
	return netip.AddrFrom4([4]byte{127, 0, byte(1 + h/250), byte(1 + h%250)})
}

// outAddr is the address of the n-th host outside the web (n from 0 to 249): 127.0.250.(n+1).
func outAddr(n int) netip.Addr { return netip.AddrFrom4([4]byte{127, 0, 250, byte(1 + n%250)}) }

// outHosts is how many listeners stand for the hosts outside the web.
const outHosts = 8

// Sizes returns the page counts of the hosts of o, largest first: Zipf's law, at least one page
// a host.
func Sizes(o Options) []int {
	o = o.withDefaults()
	var h float64
	for k := 1; k <= o.Hosts; k++ {
		h += math.Pow(float64(k), -o.Zipf)
	}
	out := make([]int, o.Hosts)
	for k := 1; k <= o.Hosts; k++ {
		out[k-1] = max(1, int(float64(o.Pages)*math.Pow(float64(k), -o.Zipf)/h+0.5))
	}
	return out
}

// Web is a running set of hosts. It is safe for concurrent use.
type Web struct {
	opts  Options
	sizes []int
	slow  map[int]bool
	// Roots are the hosts' root URLs ("http://127.0.1.1:PORT/"), the crawl's seeds, largest host first.
	Roots []string
	// out are the base URLs of the hosts outside the web.
	out []string

	srv       *http.Server
	listeners []net.Listener
	host      map[string]int // listener address -> host
	wg        sync.WaitGroup
	unscoped  atomic.Int64

	mu   sync.Mutex
	hits map[string]int // "host/path" -> requests of pages
	// spans are when each host's pages were first and last requested.
	spans map[int]Span
}

// Span is when a host's pages were first and last requested, and how many requests of them came.
type Span struct {
	First, Last time.Time
	Requests    int
}

// Start serves the web until Close.
func Start(o Options) (*Web, error) {
	o = o.withDefaults()
	if err := o.check(); err != nil {
		return nil, fmt.Errorf("realweb: %w", err)
	}
	w := &Web{opts: o, sizes: Sizes(o), slow: map[int]bool{}, host: map[string]int{}, hits: map[string]int{}, spans: map[int]Span{}}
	for i := 0; i < o.SlowHosts; i++ {
		// From the smallest host up, spread: the slow hosts are a few of the tail's.
		w.slow[o.Hosts-1-i*(o.Hosts/(2*max(o.SlowHosts, 1)))] = true
	}
	w.srv = &http.Server{Handler: http.HandlerFunc(w.serve), ReadHeaderTimeout: 10 * time.Second}
	for h := 0; h < o.Hosts; h++ {
		ln, err := net.Listen("tcp", netip.AddrPortFrom(Addr(h), 0).String())
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("realweb: listen for host %d on %v: %w", h, Addr(h), err)
		}
		w.listeners = append(w.listeners, ln)
		w.host[ln.Addr().String()] = h
		w.Roots = append(w.Roots, "http://"+ln.Addr().String()+"/")
	}
	for n := 0; n < outHosts; n++ {
		ln, err := net.Listen("tcp", netip.AddrPortFrom(outAddr(n), 0).String())
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("realweb: listen for an out-of-scope host on %v: %w", outAddr(n), err)
		}
		w.listeners = append(w.listeners, ln)
		w.out = append(w.out, "http://"+ln.Addr().String())
		w.wg.Add(1)
		go w.refuse(ln)
	}
	for _, ln := range w.listeners[:o.Hosts] {
		go func() {
			if err := w.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				panic(fmt.Sprintf("realweb: serve %v: %v", ln.Addr(), err))
			}
		}()
	}
	return w, nil
}

// refuse accepts each connection to a host outside the web, counts it and closes it.
func (w *Web) refuse(ln net.Listener) {
	defer w.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		w.unscoped.Add(1)
		c.Close()
	}
}

// Close stops every host.
func (w *Web) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	w.srv.Shutdown(ctx)
	for _, ln := range w.listeners {
		ln.Close() // the out-of-scope ones; the served ones are closed already
	}
	w.wg.Wait()
}

// Options returns the web's options, defaults filled in.
func (w *Web) Options() Options { return w.opts }

// Sizes returns the hosts' page counts, in the order of Roots.
func (w *Web) Sizes() []int { return append([]int(nil), w.sizes...) }

// Pages is how many pages the web has.
func (w *Web) Pages() int {
	n := 0
	for _, s := range w.sizes {
		n += s
	}
	return n
}

// Slow reports whether host h is one of the hosts that answer after Options.Slow.
func (w *Web) Slow(h int) bool { return w.slow[h] }

// Unscoped is how many connections reached the hosts outside the web: none, if the crawl kept
// to its scope.
func (w *Web) Unscoped() int64 { return w.unscoped.Load() }

// Fetched returns how many distinct pages were requested, and how many of them more than once.
func (w *Web) Fetched() (pages, twice int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, n := range w.hits {
		pages++
		if n > 1 {
			twice++
		}
	}
	return pages, twice
}

// SpanOf returns when host h's pages were first and last requested (the largest host is 0).
func (w *Web) SpanOf(h int) Span {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.spans[h]
}

// Twice lists the pages served more than once, as "host-index/path: n", sorted, at most max.
func (w *Web) Twice(max int) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for k, n := range w.hits {
		if n > 1 {
			out = append(out, fmt.Sprintf("%s: %d", k, n))
		}
	}
	slices.Sort(out)
	return out[:min(len(out), max)]
}

// Path is the path of page p of a host.
func Path(p int) string {
	if p == 0 {
		return "/"
	}
	return "/p/" + strconv.Itoa(p)
}

// page returns the page of path on host h, if it has one.
func (w *Web) page(h int, path string) (int, bool) {
	if path == "/" {
		return 0, true
	}
	n, err := strconv.Atoi(strings.TrimPrefix(path, "/p/"))
	if err != nil || Path(n) != path || n <= 0 || n >= w.sizes[h] {
		return 0, false
	}
	return n, true
}

// robots is host h's robots.txt, served from root: every host's search pages are not for
// crawlers, and, as on the real web, no two hosts serve the same file: each names its own
// sitemap, and some keep more of their paths from crawlers (robots.txt files differ in what
// they say and in their size, so a crawler cannot take one host's for another's).
func robots(h int, root string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# robots.txt of %s\nUser-agent: *\nDisallow: /search\nDisallow: /cart/\n", root)
	for i := range h % 7 {
		fmt.Fprintf(&b, "Disallow: /%s-%d/\n", []string{"account", "admin", "tmp", "checkout", "print", "api"}[i%6], h)
	}
	fmt.Fprintf(&b, "\nUser-agent: BadBot\nDisallow: /\n\nSitemap: %ssitemap.xml\n", root)
	return b.String()
}

func (w *Web) serve(rw http.ResponseWriter, r *http.Request) {
	addr, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	h, ok := -1, false
	if addr != nil {
		h, ok = w.host[addr.String()]
	}
	if !ok {
		http.Error(rw, "no such host", http.StatusMisdirectedRequest)
		return
	}
	d := w.latency(h, r.URL.Path)
	if w.slow[h] && r.URL.Path != "/robots.txt" {
		d = w.opts.Slow
	}
	t := time.NewTimer(d) // the server's own time to answer
	select {
	case <-t.C:
	case <-r.Context().Done():
		t.Stop()
		return
	}
	if r.URL.Path == "/robots.txt" {
		rw.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(rw, robots(h, w.Roots[h]))
		return
	}
	p, ok := w.page(h, r.URL.Path)
	if !ok {
		http.NotFound(rw, r)
		return
	}
	now := time.Now()
	w.mu.Lock()
	w.hits[strconv.Itoa(h)+r.URL.Path]++
	sp := w.spans[h]
	if sp.Requests == 0 {
		sp.First = now
	}
	sp.Last, sp.Requests = now, sp.Requests+1
	w.spans[h] = sp
	w.mu.Unlock()
	rw.Header().Set("Content-Type", "text/html; charset=utf-8")
	rw.Write(w.Render(h, p))
}

// latency is how long host h takes to answer path: drawn from the lognormal of Median and P99
// (seeded by the host and path, so the same request takes the same time), at most MaxLatency.
func (w *Web) latency(h int, path string) time.Duration {
	r := newRand(w.opts.Seed, 0x1a7e, uint64(h), hashString(path))
	return Lognormal(r.NormFloat64(), w.opts.Median, w.opts.P99, w.opts.MaxLatency)
}

// z99 is the standard normal's 99th percentile.
const z99 = 2.3263478740408408

// Lognormal is the time at standard normal deviate z of the lognormal with that median and 99th
// percentile, at most ceiling.
func Lognormal(z float64, median, p99, ceiling time.Duration) time.Duration {
	sigma := math.Log(float64(p99)/float64(median)) / z99
	d := time.Duration(float64(median) * math.Exp(sigma*z))
	return min(d, ceiling)
}
