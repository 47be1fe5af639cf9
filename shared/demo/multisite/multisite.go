// Package multisite serves a generated web of many hosts on loopback addresses (127.0.1.1,
// 127.0.1.2, ...), for measuring a wide crawl on one machine: each host has its own listener and
// robots.txt, pages link mostly within their host and sometimes across, and every answer can take
// a set time, as a real server's does. It counts the requests for each page, so a caller can tell
// how many pages were fetched, and how many twice.
package multisite

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options shape the web.
type Options struct {
	// Hosts is how many hosts serve pages, on 127.0.1.1 upwards (at most 254).
	Hosts int
	// Pages is how many pages there are in all, spread evenly over the hosts.
	Pages int
	// Links is how many links each page carries.
	Links int
	// CrossHost is the share of a page's links that point at another host (0 to 1).
	CrossHost float64
	// PageBytes pads each page to about this size.
	PageBytes int
	// Latency is how long each answer takes.
	Latency time.Duration
}

// Web is a running set of hosts. It is safe for concurrent use.
type Web struct {
	opts    Options
	servers []*http.Server
	// Roots are the hosts' root URLs ("http://127.0.1.1:PORT/"), the crawl's seeds.
	Roots []string

	mu   sync.Mutex
	hits map[string]int // "host/path" -> requests
}

// Start serves the web until Close.
func Start(o Options) (*Web, error) {
	if o.Hosts < 1 || o.Hosts > 254 {
		return nil, fmt.Errorf("hosts %d: want 1 to 254 (one loopback address each)", o.Hosts)
	}
	if o.Pages < o.Hosts {
		return nil, fmt.Errorf("pages %d: want at least one per host (%d hosts)", o.Pages, o.Hosts)
	}
	if o.Links < 1 || o.CrossHost < 0 || o.CrossHost > 1 {
		return nil, fmt.Errorf("links %d, cross-host share %v: want at least 1 link and a share from 0 to 1", o.Links, o.CrossHost)
	}
	w := &Web{opts: o, hits: map[string]int{}}
	for h := 0; h < o.Hosts; h++ {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.1.%d:0", h+1))
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("listen for host %d: %w", h, err)
		}
		srv := &http.Server{Handler: w.handler(h), ReadHeaderTimeout: 10 * time.Second}
		w.servers = append(w.servers, srv)
		w.Roots = append(w.Roots, "http://"+ln.Addr().String()+"/")
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				panic(fmt.Sprintf("multisite: serve host %d: %v", h, err))
			}
		}()
	}
	return w, nil
}

// Close stops every host.
func (w *Web) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range w.servers {
		s.Shutdown(ctx)
	}
}

// perHost is how many pages host h serves: the pages split evenly, the first hosts one more.
func (w *Web) perHost(h int) int {
	n := w.opts.Pages / w.opts.Hosts
	if h < w.opts.Pages%w.opts.Hosts {
		n++
	}
	return n
}

// Links returns the pages that page p of host h links to, as (host, page) pairs: first its two
// children in a binary tree of its host's pages (2p+1 and 2p+2, so that every page is within
// log2(pages) links of its host's root, inside any crawl depth limit), then pseudo-random
// others, a CrossHost share of them on other hosts. A page with one link links to the next page.
func (w *Web) Links(h, p int) [][2]int {
	n := w.perHost(h)
	var out [][2]int
	if w.opts.Links == 1 {
		return [][2]int{{h, (p + 1) % n}}
	}
	for _, c := range []int{2*p + 1, 2*p + 2} {
		out = append(out, [2]int{h, c % n})
	}
	cross := int(float64(w.opts.Links)*w.opts.CrossHost + 0.5)
	for j := 2; j < w.opts.Links; j++ {
		th := h
		if j-1 <= cross && w.opts.Hosts > 1 {
			th = (h + 1 + (p*31+j*17)%(w.opts.Hosts-1)) % w.opts.Hosts
		}
		out = append(out, [2]int{th, (p*7919 + j*104729 + j*j*31) % w.perHost(th)})
	}
	return out
}

// Path is the path of page p of a host.
func Path(p int) string {
	if p == 0 {
		return "/"
	}
	return "/p/" + strconv.Itoa(p)
}

func (w *Web) handler(h int) http.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request) {
		if d := w.opts.Latency; d > 0 {
			t := time.NewTimer(d) // the server's own latency
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		if r.URL.Path == "/robots.txt" {
			rw.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(rw, "User-agent: *\nDisallow:\n")
			return
		}
		p, ok := w.page(h, r.URL.Path)
		if !ok {
			http.NotFound(rw, r)
			return
		}
		w.mu.Lock()
		w.hits[strconv.Itoa(h)+r.URL.Path]++
		w.mu.Unlock()
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		rw.Write(w.render(h, p))
	}
}

func (w *Web) page(h int, path string) (int, bool) {
	if path == "/" {
		return 0, true
	}
	n, err := strconv.Atoi(strings.TrimPrefix(path, "/p/"))
	if err != nil || Path(n) != path || n <= 0 || n >= w.perHost(h) {
		return 0, false
	}
	return n, true
}

func (w *Web) render(h, p int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "<!doctype html><html><head><meta charset=\"utf-8\"><title>Host %d page %d</title></head><body>\n<ul>\n", h, p)
	for _, l := range w.Links(h, p) {
		fmt.Fprintf(&b, "<li><a href=\"%s%s\">host %d page %d</a></li>\n", strings.TrimSuffix(w.Roots[l[0]], "/"), Path(l[1]), l[0], l[1])
	}
	b.WriteString("</ul>\n")
	for b.Len() < w.opts.PageBytes {
		b.WriteString("<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore.</p>\n")
	}
	b.WriteString("</body></html>\n")
	return []byte(b.String())
}

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
