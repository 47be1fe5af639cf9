package e2etest

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
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/records"
	"github.com/crawlstack/crawlstack/shared/crawl/web/pdftext"
	"github.com/crawlstack/crawlstack/shared/testkit/pdfgen"
)

// ContentSite serves, on 127.0.0.1, an HTML home page that links a PDF (itself linking one more
// HTML page), a PDF that makes the PDF reader panic, a JSON API and a Latin-1 text file, and
// counts the requests of each path.
type ContentSite struct {
	URL string // the root, with its trailing slash
	// PDF is the PDF served at /report.pdf, as pdfgen wrote it: the oracle of its record.
	PDF pdfgen.Doc

	files map[string]contentFile
	mu    sync.Mutex
	hits  map[string]int
}

type contentFile struct {
	contentType string
	body        []byte
}

// The text file's lines, in Latin-1 on the wire; and the JSON API's products.
const contentText = "Caf\xe9 opening hours\nMonday to Friday\n"

var contentProducts = []map[string]any{{"name": "Steel kettle", "href": "/p/steel"}, {"name": "Glass kettle", "href": "p/glass"}}

// NewContentSite serves a ContentSite until the test ends.
func NewContentSite(t testing.TB) *ContentSite {
	t.Helper()
	s := &ContentSite{hits: map[string]int{}, PDF: pdfgen.Doc{Title: "Annual report", Author: "Grace Hopper", Subject: "Kettles",
		Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Pages: [][]string{{"Revenue grew by a third"}, {"Costs fell"}},
		Links: []string{"/from-pdf"}}}
	pdf, err := pdfgen.Write(s.PDF)
	if err != nil {
		t.Fatal(err)
	}
	poison, err := pdfgen.Poison(pdf, 10000, func(b []byte) bool {
		_, err := pdftext.Extract(context.Background(), b, nil, pdftext.Limits{})
		return err != nil && strings.Contains(err.Error(), "the pdf reader failed")
	})
	if err != nil {
		t.Fatal(err)
	}
	api, err := json.Marshal(map[string]any{"shop": "kettles", "products": contentProducts})
	if err != nil {
		t.Fatal(err)
	}
	html := func(title, body string) contentFile {
		return contentFile{"text/html; charset=utf-8", []byte("<html><head><title>" + title + "</title></head><body>" + body + "</body></html>")}
	}
	s.files = map[string]contentFile{
		"/": html("Home", `<a href="/report.pdf">report</a> <a href="/poison.pdf">poison</a>
			<a href="/api/products.json">api</a> <a href="/notes.txt">notes</a>`),
		"/from-pdf":          html("Linked from the PDF", "<p>reached through the PDF's link</p>"),
		"/report.pdf":        {"application/pdf", pdf},
		"/poison.pdf":        {"application/pdf", poison},
		"/api/products.json": {"application/json", api},
		"/notes.txt":         {"text/plain; charset=iso-8859-1", []byte(contentText)},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		s.mu.Unlock()
		f, ok := s.files[r.URL.Path]
		if !ok {
			http.NotFound(w, r) // robots.txt too: all allowed
			return
		}
		w.Header().Set("Content-Type", f.contentType)
		w.Write(f.body)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL + "/"
	return s
}

// Hits is how many requests path had.
func (s *ContentSite) Hits(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

// ContentSpec parses the three kinds besides HTML, and reads the JSON API by JSONPath.
func (s *ContentSite) ContentSpec() string {
	return fmt.Sprintf(`version: 1
seeds: [%s]
max_depth: 2
parse: [pdf, json, text]
extract:
  title: {css: title}
  shop: {json: $.shop}
items:
  products:
    json: $.products
    fields:
      name: {json: $.name}
      link: {json: $.href, url: true}
`, s.URL)
}

// CheckContentKinds crawls a ContentSite with ContentSpec, with concurrency fetches in flight:
//   - every URL is fetched once and ends fetched, the PDF that panics the reader too: nothing is
//     lost or failed, and the page the PDF links is reached through it;
//   - the records, read back from the stored JSON lines as plain JSON objects (not as the
//     records.Record type the parser writes), hold what the site served: the PDF's title, author,
//     dates, page count and each page's text as pdfgen wrote them; the poison PDF a parse error;
//     the JSON API's field and one item per product, its link resolved; the text file's lines,
//     decoded from Latin-1; and the home page's title.
func (h *Harness) CheckContentKinds(site *ContentSite, concurrency int) {
	t := h.T
	t.Helper()
	crawl := h.CrawlFile("content.yaml", site.ContentSpec(), concurrency)
	tally, err := crawlstate.New(h.Table).Tally(context.Background(), crawl)
	if err != nil {
		t.Fatal(err)
	}
	if n := int64(len(site.files)); tally.Fetched != n || tally.Pending() != 0 || tally.Failed != 0 {
		t.Errorf("tally %d fetched, %d pending, %d failed: want the %d URLs fetched", tally.Fetched, tally.Pending(), tally.Failed, n)
	}
	for p := range site.files {
		if n := site.Hits(p); n != 1 {
			t.Errorf("%s asked for %d times, want once", p, n)
		}
	}
	recs := h.rawRecords(crawl)
	rec := func(path string) map[string]any {
		r, ok := recs[strings.TrimSuffix(site.URL, "/")+path]
		if !ok {
			t.Fatalf("no record of %s among %d", path, len(recs))
		}
		return r
	}
	pdf := rec("/report.pdf")
	info, _ := pdf["pdf"].(map[string]any)
	text, _ := pdf["text"].(string)
	want := site.PDF
	if pdf["title"] != want.Title || info["author"] != want.Author || info["subject"] != want.Subject ||
		info["created"] != want.Created.Format(time.RFC3339) || info["pages"] != float64(len(want.Pages)) || pdf["class"] != nil {
		t.Errorf("the PDF's record: title %v, pdf %v, class %v error %v; want %+v", pdf["title"], info, pdf["class"], pdf["error"], want)
	}
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if !slices.Equal(lines, slices.Concat(want.Pages...)) {
		t.Errorf("the PDF's text lines %q, want %q", lines, slices.Concat(want.Pages...))
	}
	if links, _ := pdf["outLinks"].([]any); len(links) != 1 || links[0] != site.URL+"from-pdf" {
		t.Errorf("the PDF's out-links %v, want its link annotation, resolved", pdf["outLinks"])
	}
	if r := rec("/from-pdf"); r["title"] != "Linked from the PDF" {
		t.Errorf("the page the PDF links: %v", r)
	}
	if p := rec("/poison.pdf"); p["class"] != "parse" || !strings.Contains(fmt.Sprint(p["error"]), "pdf") {
		t.Errorf("the poison PDF's record: class %v, error %v; want a parse error of the PDF", p["class"], p["error"])
	}
	api := rec("/api/products.json")
	data, _ := api["data"].(map[string]any)
	items, _ := api["items"].(map[string]any)
	wantItems := []any{map[string]any{"name": "Steel kettle", "link": site.URL + "p/steel"},
		map[string]any{"name": "Glass kettle", "link": site.URL + "api/p/glass"}}
	if data["shop"] != "kettles" || data["title"] != nil || fmt.Sprint(items["products"]) != fmt.Sprint(wantItems) {
		t.Errorf("the API's record: data %v, items %v; want shop kettles and %v", data, items, wantItems)
	}
	if r := rec("/notes.txt"); r["text"] != "Café opening hours\nMonday to Friday\n" || r["class"] != nil {
		t.Errorf("the text file's record: text %q class %v", r["text"], r["class"])
	}
	if r := rec("/"); r["title"] != "Home" || r["text"] != nil {
		t.Errorf("the home page's record: title %v text %v", r["title"], r["text"])
	}
}

// rawRecords are crawl's records as stored, each line decoded as a plain JSON object, by URL.
func (h *Harness) rawRecords(crawl string) map[string]map[string]any {
	h.T.Helper()
	ctx := context.Background()
	keys, err := h.Blobs.List(ctx, records.Dir(crawl))
	if err != nil {
		h.T.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, k := range keys {
		b, err := h.Blobs.Get(ctx, k)
		if err != nil {
			h.T.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var r map[string]any
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				h.T.Fatalf("a line of %s: %v", k, err)
			}
			u, _ := r["url"].(string)
			out[u] = r
		}
		if err := sc.Err(); err != nil {
			h.T.Fatalf("%s: %v", k, err)
		}
	}
	return out
}
