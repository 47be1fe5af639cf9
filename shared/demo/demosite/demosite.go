// Package demosite serves a generated website for `make run`, the benchmark and the end-to-end
// tests: Pages HTML pages of about PageBytes bytes, each with Links links to other pages, every page
// reachable from "/", plus a robots.txt that disallows /private/ (and asks for a Crawl-delay when
// one is set). It can answer each request after a set latency, as a distant server would. It
// counts the requests for each path, so tests can prove that no page was fetched twice.
package demosite

import (
	"compress/gzip"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Site is a generated website. It is safe for concurrent use.
type Site struct {
	Pages, Links, PageBytes int
	// CrawlDelay, when set, is the Crawl-delay robots.txt asks of every crawler, in seconds with
	// a fraction if need be ("Crawl-delay: 0.25"). Zero leaves robots.txt without one. Set it
	// before the site serves.
	CrawlDelay time.Duration
	// Orphans, when set, adds that many pages (/o/0, /o/1 ...) that no page links to: only the
	// site's sitemaps list them. robots.txt then names a sitemap index (/sitemaps/index.xml) of a
	// gzip-compressed sitemap (/sitemaps/a.xml.gz) and a plain one (/sitemaps/b.xml), and
	// /sitemap.xml lists the rest: a crawl finds every orphan only if it reads all three ways.
	// Set it before the site serves.
	Orphans int
	// Latency, when set, is how long every response (robots.txt and 404s too) waits before its
	// first byte, as a distant server would. Set it before the site serves.
	Latency time.Duration
	// Validators, when set, has pages answer with an ETag and a Last-Modified, and 304 to a
	// conditional GET of their version (versions.go). Set it before the site serves.
	Validators bool
	// Files, when set, has the home page link a PDF (FilePath, FileBody), which the site serves as
	// application/pdf: for crawls that keep types they do not parse. Set it before the site serves.
	Files bool

	mu        sync.Mutex
	hits      map[string]int
	versions  map[string]int       // path -> version, when changed (Change)
	changedAt map[string]time.Time // path -> its last change
	bare      map[string]bool      // paths that answer without validators
	traffic   Traffic
}

// New returns a site of pages pages with links links each, padded to about pageBytes bytes.
func New(pages, links, pageBytes int) *Site {
	return &Site{Pages: max(pages, 1), Links: max(links, 1), PageBytes: pageBytes, hits: map[string]int{}}
}

// FilePath is the PDF that the home page of a site with Files links, and FileBody its bytes.
const FilePath = "/files/report.pdf"

// FileBody is the PDF the site serves at FilePath: bytes a parser of HTML finds nothing in.
var FileBody = []byte("%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n")

// Path is the path of page i ("/" for page 0).
func Path(i int) string {
	if i == 0 {
		return "/"
	}
	return "/p/" + strconv.Itoa(i)
}

// ServeHTTP serves robots.txt, the pages, and 404 for anything else.
func (s *Site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.hits[r.URL.Path]++
	s.mu.Unlock()
	if s.Latency > 0 {
		t := time.NewTimer(s.Latency)
		select {
		case <-t.C:
		case <-r.Context().Done(): // the client is gone
			t.Stop()
			return
		}
	}
	if r.URL.Path == "/robots.txt" {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, s.robots())
		if s.Orphans > 0 {
			fmt.Fprintf(w, "Sitemap: http://%s/sitemaps/index.xml\n", r.Host)
		}
		return
	}
	if s.Orphans > 0 && s.serveSitemap(w, r) {
		return
	}
	if s.Files && r.URL.Path == FilePath {
		w.Header().Set("Content-Type", "application/pdf")
		w.Write(FileBody)
		return
	}
	i, ok := s.page(r.URL.Path)
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	s.servePage(w, r, s.render(i))
}

// robots is the site's robots.txt.
func (s *Site) robots() string {
	const rules = "User-agent: *\nDisallow: /private/\n"
	if s.CrawlDelay <= 0 {
		return rules
	}
	return rules + "Crawl-delay: " + strconv.FormatFloat(s.CrawlDelay.Seconds(), 'f', -1, 64) + "\n"
}

func (s *Site) page(p string) (int, bool) {
	if p == "/" {
		return 0, true
	}
	n, err := strconv.Atoi(strings.TrimPrefix(p, "/p/"))
	if err != nil || !strings.HasPrefix(p, "/p/") || n <= 0 || n >= s.Pages || Path(n) != p {
		return 0, false
	}
	return n, true
}

// Targets returns the pages page i links to: the next page (so all are reachable), then
// pseudo-random others.
func (s *Site) Targets(i int) []int {
	out := []int{(i + 1) % s.Pages}
	for j := 1; j < s.Links; j++ {
		out = append(out, (i*7919+j*104729+j*j*31)%s.Pages)
	}
	return out
}

func (s *Site) render(i int) []byte {
	var b strings.Builder
	b.Grow(s.PageBytes + 512)
	fmt.Fprintf(&b, "<!doctype html><html><head><meta charset=\"utf-8\"><title>Demo page %d</title>\n", i)
	// Data for extraction: OpenGraph and meta tags, a schema.org Product in JSON-LD, a price and tags.
	p := Product(i)
	fmt.Fprintf(&b, "<meta property=\"og:title\" content=\"%s\"><meta property=\"og:type\" content=\"product\">\n", p.Name)
	fmt.Fprintf(&b, "<meta name=\"description\" content=\"%s, %s\">\n", p.Name, p.SKU)
	fmt.Fprintf(&b, "<script type=\"application/ld+json\">{\"@context\":\"https://schema.org\",\"@type\":\"Product\",\"name\":%q,\"sku\":%q}</script>\n", p.Name, p.SKU)
	fmt.Fprintf(&b, "</head><body>\n<h1>Demo page %d</h1>\n<p class=\"price\">Price: $%s</p>\n<p>", i, p.Price)
	for _, t := range p.Tags {
		fmt.Fprintf(&b, "<span class=\"tag\">%s</span> ", t)
	}
	b.WriteString("</p>\n<ul>\n")
	for _, t := range s.Targets(i) {
		fmt.Fprintf(&b, "<li><a href=\"%s\">page %d</a></li>\n", Path(t), t)
	}
	if i == 0 && s.Files {
		fmt.Fprintf(&b, "<li><a href=\"%s\">a report (PDF)</a></li>\n", FilePath)
	}
	if i == 0 {
		b.WriteString("<li><a href=\"/private/secret\">private (disallowed by robots.txt)</a></li>\n")
		b.WriteString("<li><a rel=\"nofollow\" href=\"/p/nofollow-never-fetched\">nofollow</a></li>\n")
	}
	b.WriteString("</ul>\n")
	for b.Len() < s.PageBytes {
		b.WriteString("<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore.</p>\n")
	}
	b.WriteString("</body></html>\n")
	return []byte(b.String())
}

// ProductData is the data page i shows for extraction tests: a product with its name and SKU (in
// the OpenGraph title, the description and a JSON-LD Product), its price and its tags.
type ProductData struct {
	Name, SKU, Price string
	Tags             []string
}

// Product returns the data of page i.
func Product(i int) ProductData {
	tags := []string{"demo"}
	if i%2 == 0 {
		tags = append(tags, "even")
	}
	if i%3 == 0 {
		tags = append(tags, "three")
	}
	return ProductData{Name: fmt.Sprintf("Demo product %d", i), SKU: fmt.Sprintf("SKU-%05d", i),
		Price: fmt.Sprintf("%d.%02d", 10+i%90, (i*37)%100), Tags: tags}
}

// Hits returns how many times path was requested.
func (s *Site) Hits(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

// Repeats returns the paths requested more than once (robots.txt aside).
func (s *Site) Repeats() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for p, n := range s.hits {
		if n > 1 && p != "/robots.txt" {
			out[p] = n
		}
	}
	return out
}

// Fetched returns how many distinct pages were requested.
func (s *Site) Fetched() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for p := range s.hits {
		if _, ok := s.page(p); ok {
			n++
		}
	}
	return n
}

// OrphanPath is the path of orphan page i, which only the sitemaps list.
func OrphanPath(i int) string { return "/o/" + strconv.Itoa(i) }

// orphanRanges are the orphans each sitemap lists: /sitemap.xml the first third, the gzip
// sitemap the second, the plain one of the index the rest.
func (s *Site) orphanRanges() map[string][2]int {
	a, b := s.Orphans/3, 2*s.Orphans/3
	return map[string][2]int{"/sitemap.xml": {0, a}, "/sitemaps/a.xml.gz": {a, b}, "/sitemaps/b.xml": {b, s.Orphans}}
}

// serveSitemap serves the sitemaps and the orphan pages; false for any other path.
func (s *Site) serveSitemap(w http.ResponseWriter, r *http.Request) bool {
	p := r.URL.Path
	base := "http://" + r.Host
	if p == "/sitemaps/index.xml" {
		w.Header().Set("Content-Type", "application/xml")
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<sitemap><loc>%s/sitemaps/a.xml.gz</loc><lastmod>2026-11-30</lastmod></sitemap>
<sitemap><loc>%s/sitemaps/b.xml</loc></sitemap>
</sitemapindex>
`, base, base)
		return true
	}
	if rg, ok := s.orphanRanges()[p]; ok {
		var b strings.Builder
		b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` + "\n")
		for i := rg[0]; i < rg[1]; i++ {
			fmt.Fprintf(&b, "<url><loc>%s%s</loc><lastmod>%s</lastmod></url>\n", base, OrphanPath(i), s.orphanLastmod(i))
		}
		b.WriteString("</urlset>\n")
		if strings.HasSuffix(p, ".gz") {
			w.Header().Set("Content-Type", "application/gzip")
			zw := gzip.NewWriter(w)
			zw.Write([]byte(b.String()))
			zw.Close()
			return true
		}
		w.Header().Set("Content-Type", "application/xml")
		fmt.Fprint(w, b.String())
		return true
	}
	n, err := strconv.Atoi(strings.TrimPrefix(p, "/o/"))
	if err != nil || !strings.HasPrefix(p, "/o/") || n < 0 || n >= s.Orphans || OrphanPath(n) != p {
		return false
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	s.servePage(w, r, fmt.Appendf(nil, "<!doctype html><html><head><title>Orphan %d</title></head><body><h1>Orphan %d</h1><p>Only the sitemaps link here.</p></body></html>\n", n, n))
	return true
}

// OrphansFetched returns how many distinct orphan pages were requested.
func (s *Site) OrphansFetched() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for i := 0; i < s.Orphans; i++ {
		if s.hits[OrphanPath(i)] > 0 {
			n++
		}
	}
	return n
}
