package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/demo/demosite"
)

// tried runs crawl try with args and decodes what it prints.
func tried(t *testing.T, args ...string) Tried {
	t.Helper()
	code, stdout, stderr := runMain(t, append([]string{"try"}, args...)...)
	if code != ExitOK {
		t.Fatalf("crawl try %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
	}
	var got Tried
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("crawl try printed no JSON document: %v\n%s", err, stdout)
	}
	return got
}

// crawl try yields on one page what a crawl of the same spec records for it (the crawl's record is
// the oracle), sent with the spec's User-Agent and header; one --css or --xpath field works alone,
// on a URL or a saved file; and the guard refuses loopback unless --allow-net admits it.
func TestTryYieldsWhatTheCrawlRecords(t *testing.T) {
	h := newHarness(t, 6, 2, 30*time.Second)
	spec := h.SpecYAML()
	crawl := h.CrawlFile("products.yaml", spec, 4)
	recs := h.RecordsOf(crawl)
	page := h.Site.PageURL(3)
	specFile := writeFile(t, "products.yaml", spec)
	before := h.Site.Agents()

	got := tried(t, "--allow-net", "127.0.0.0/8", specFile, page)
	if want := recs[page]; got.URL != page || got.Status != http.StatusOK || !reflect.DeepEqual(got.Data, want.Data) ||
		len(got.Items) == 0 || !reflect.DeepEqual(got.Items, want.Items) {
		t.Errorf("crawl try %s: %+v\nwant the crawl's record's data %#v and items %#v", page, got, want.Data, want.Items)
	}
	if got.Data["price"] != demosite.Product(3).Price {
		t.Errorf("price %v, want %s", got.Data["price"], demosite.Product(3).Price)
	}
	after := h.Site.Agents()
	for agent, n := range after {
		if n != before[agent] && !strings.Contains(agent, "|yes-it-is") {
			t.Errorf("crawl try sent %q, want the spec's User-Agent and header", agent)
		}
	}

	if x := tried(t, "--allow-net", "127.0.0.0/8", "--xpath", "//h1", page); x.Data["value"] != "Demo page 3" {
		t.Errorf("--xpath //h1: %v, want Demo page 3", x.Data)
	}
	resp, err := http.Get(page)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	saved := writeFile(t, "page.html", string(body))
	links := tried(t, "--base", page, "--css", "a", "--attr", "href", "--all", "--url", saved)
	list, _ := links.Data["value"].([]any)
	if len(list) == 0 || links.URL != page {
		t.Fatalf("links of the saved page: %+v", links)
	}
	for _, l := range list {
		if s, _ := l.(string); !strings.HasPrefix(s, strings.TrimSuffix(h.Site.URL, "/")+"/") {
			t.Errorf("link %v not resolved against %s", l, page)
		}
	}

	code, _, stderr := runMain(t, "try", "--css", "h1", page)
	if code != ExitFailed || !strings.Contains(stderr, "--allow-net") {
		t.Errorf("loopback without --allow-net: exit %d\n%s\nwant refused with the flag named", code, stderr)
	}
	noFields := writeFile(t, "plain.yaml", "version: 1\nseeds: ["+page+"]\n")
	if code, _, stderr := runMain(t, "try", noFields, page); code != ExitUsage || !strings.Contains(stderr, "no extract section and no items") {
		t.Errorf("a spec with no fields: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := runMain(t, "try", "--xpath", "//a[@", page); code != ExitUsage || !strings.Contains(stderr, "xpath") {
		t.Errorf("a malformed xpath: exit %d\n%s", code, stderr)
	}
}

// crawl try reads a JSON response with json: selectors, from a loopback API and from a saved
// .json file, the same; an item rule yields one item per element of the selected array; a bad
// JSONPath is a usage error naming its line, and a body that is not JSON a failure that says so.
func TestTryReadsJSONWithJSONPath(t *testing.T) {
	api := `{"shop": "kettles", "products": [{"name": "Steel", "href": "/p/1"}, {"name": "Glass", "href": "p/2"}]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bad" {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"shop": `)
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		io.WriteString(w, api)
	}))
	defer srv.Close()
	spec := writeFile(t, "api.yaml", "version: 1\nseeds: ["+srv.URL+"/api/]\nextract:\n  shop: {json: $.shop}\n"+
		"items:\n  products:\n    json: $.products\n    fields:\n      name: {json: $.name}\n      link: {json: $.href, url: true}\n")
	want := Tried{URL: srv.URL + "/api/list", Status: http.StatusOK, Data: map[string]any{"shop": "kettles"},
		Items: map[string]any{"products": []any{map[string]any{"name": "Steel", "link": srv.URL + "/p/1"},
			map[string]any{"name": "Glass", "link": srv.URL + "/api/p/2"}}}}
	if got := tried(t, "--allow-net", "127.0.0.0/8", spec, srv.URL+"/api/list"); !reflect.DeepEqual(got, want) {
		t.Errorf("the API:\n got %+v\nwant %+v", got, want)
	}
	saved := writeFile(t, "list.json", api)
	want.Status = 0
	if got := tried(t, "--base", srv.URL+"/api/list", spec, saved); !reflect.DeepEqual(got, want) {
		t.Errorf("the saved file:\n got %+v\nwant %+v", got, want)
	}
	if got := tried(t, "--json", "$.products[*].name", "--all", saved); !reflect.DeepEqual(got.Data["value"], []any{"Steel", "Glass"}) {
		t.Errorf("--json: %v", got.Data)
	}
	bad := writeFile(t, "bad.yaml", "version: 1\nseeds: ["+srv.URL+"/]\nextract:\n  shop: {json: 'shop'}\n")
	if code, _, stderr := runMain(t, "try", bad, saved); code != ExitUsage || !strings.Contains(stderr, "line 4: extract.shop.json") {
		t.Errorf("a bad JSONPath: exit %d\n%s\nwant a usage error at line 4", code, stderr)
	}
	if code, _, stderr := runMain(t, "try", "--allow-net", "127.0.0.0/8", spec, srv.URL+"/bad"); code != ExitFailed || !strings.Contains(stderr, "read the JSON") {
		t.Errorf("a body that is not JSON: exit %d\n%s", code, stderr)
	}
}
