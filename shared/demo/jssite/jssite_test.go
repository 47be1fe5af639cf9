package jssite_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/web/links"
	"github.com/crawlstack/crawlstack/shared/demo/jssite"
)

// Read without its scripts, no page has a link or its text: the crawler's own extractor finds
// none. Its JSON holds the links the site says the script adds, and they reach every page.
func TestPagesHaveLinksOnlyThroughTheirScript(t *testing.T) {
	site := jssite.New(jssite.Options{Pages: 13, Links: 3})
	defer site.Close()
	reached := map[string]bool{site.PageURL(0): true}
	for i := range site.Pages() {
		body, ctype := get(t, site.PageURL(i), http.StatusOK)
		if string(body) != string(site.HTML(i)) {
			t.Errorf("page %d: served body differs from HTML(%d)", i, i)
		}
		u, _ := url.Parse(site.PageURL(i))
		page, err := links.Extract(body, ctype, u, links.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Links) != 0 || strings.Contains(string(body), jssite.Text(i)) || strings.Contains(string(body), "/p/") {
			t.Errorf("page %d: static HTML has links %v or its text:\n%s", i, page.Links, body)
		}
		raw, _ := get(t, site.URL()+"/api/page/"+itoa(i)+".json", http.StatusOK)
		var api struct {
			Text  string
			Links []string
		}
		if err := json.Unmarshal(raw, &api); err != nil {
			t.Fatalf("page %d JSON %s: %v", i, raw, err)
		}
		var abs []string
		for _, l := range api.Links {
			abs = append(abs, site.URL()+l)
			reached[site.URL()+l] = true
		}
		if api.Text != jssite.Text(i) || !slices.Equal(abs, site.Links(i)) {
			t.Errorf("page %d JSON %+v: want text %q and links %v", i, api, jssite.Text(i), site.Links(i))
		}
	}
	if len(reached) != site.Pages() {
		t.Errorf("the links reach %d of %d pages", len(reached), site.Pages())
	}
	for _, path := range []string{"/p/0", "/p/13", "/p/01", "/api/page/x.json", "/nothing"} {
		get(t, site.URL()+path, http.StatusNotFound)
	}
	if site.Hits("/p/1") != 1 || site.Hits("/api/page/1.json") != 1 {
		t.Errorf("hits: page %d, JSON %d: want 1 each", site.Hits("/p/1"), site.Hits("/api/page/1.json"))
	}
}

func get(t *testing.T, u string, want int) ([]byte, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != want {
		t.Fatalf("GET %s: %d, %v: want %d", u, resp.StatusCode, err, want)
	}
	return body, resp.Header.Get("Content-Type")
}

func itoa(i int) string { return strconv.Itoa(i) }
