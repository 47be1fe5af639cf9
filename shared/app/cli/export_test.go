package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/crawlstack/crawlstack/shared/demo/demosite"
	"github.com/crawlstack/crawlstack/shared/ops/export/exporttest"
)

// siteDigest GETs u and returns the SHA-256 of its body, as the WARC-Payload-Digest writes it.
func siteDigest(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// crawl export writes a crawl's records, each page once, into one file that readers the project
// does not write parse (csv-parse, JSON.parse): the data a spec extracted is the data the demo
// site shows, page by page.
func TestExportACrawlWithExtractedFields(t *testing.T) {
	site := demosite.New(40, 4, 500)
	srv := httptest.NewServer(site)
	defer srv.Close()
	spec := writeFile(t, "shop.yaml", "version: 1\nseeds: ["+srv.URL+"/]\nextract:\n"+
		"  price: {css: .price, regexp: '([0-9]+\\.[0-9]{2})'}\n  tags: {css: .tag, all: true}\n  missing: {css: .no-such-class}\n")
	state := t.TempDir()
	code, stdout, stderr := runMain(t, "run", "--state", state, "--allow-net", "127.0.0.0/8", "--host-rps", "0", "--json", spec)
	if code != ExitOK {
		t.Fatalf("crawl run: exit %d\n%s", code, stderr)
	}
	sum := lastJSON(t, stdout)
	if sum.Fetched != 40 {
		t.Fatalf("fetched %d pages, want the site's 40", sum.Fetched)
	}
	page := func(u string) int {
		p := strings.TrimPrefix(u, srv.URL)
		for i := range 40 {
			if demosite.Path(i) == p {
				return i
			}
		}
		t.Fatalf("no page of the site at %s", u)
		return -1
	}
	dir := t.TempDir()

	csvFile := filepath.Join(dir, "pages.csv") // the name picks the format
	code, _, stderr = runMain(t, "export", "--state", state, "-o", csvFile, sum.Crawl)
	if code != ExitOK || !strings.Contains(stderr, "exported 40 pages of ") {
		t.Fatalf("crawl export: exit %d\n%s", code, stderr)
	}
	rows := exporttest.Read(t, "csv", csvFile)
	var seen []int
	for n, r := range rows {
		i := page(r["url"].(string))
		seen = append(seen, i)
		if n < 3 { // the digest is the SHA-256 of the page the site serves
			if want := siteDigest(t, r["url"].(string)); r["digest"] != want {
				t.Errorf("digest of page %d = %q, the site's body hashes to %q", i, r["digest"], want)
			}
		}
		want := demosite.Product(i)
		tags, _ := json.Marshal(want.Tags)
		if r["data.price"] != want.Price || r["data.tags"] != string(tags) || r["data.missing"] != "" ||
			r["title"] != fmt.Sprintf("Demo page %d", i) || r["status"] != "200" || r["crawl"] != sum.Crawl {
			t.Errorf("row of page %d: %v; want price %s and tags %s", i, r, want.Price, tags)
		}
	}
	slices.Sort(seen)
	var all []int
	for i := range 40 {
		all = append(all, i)
	}
	if !slices.Equal(seen, all) {
		t.Errorf("the CSV has the pages %v, want each of the 40 once", seen)
	}

	jsonlFile := filepath.Join(dir, "pages.out")
	code, _, stderr = runMain(t, "export", "--state", state, "--format", "jsonl", "-o", jsonlFile, sum.Crawl)
	if code != ExitOK {
		t.Fatalf("crawl export --format jsonl: exit %d\n%s", code, stderr)
	}
	lines := exporttest.Read(t, "jsonl", jsonlFile)
	if len(lines) != 40 {
		t.Errorf("%d JSON lines, want 40", len(lines))
	}
	for _, l := range lines {
		data := l["data"].(map[string]any)
		want := demosite.Product(page(l["url"].(string)))
		if data["price"] != want.Price || data["missing"] != nil || len(data["tags"].([]any)) != len(want.Tags) {
			t.Errorf("record of %s: data %v, want price %s and tags %v", l["url"], data, want.Price, want.Tags)
		}
	}

	// Stdout, for a pipe; and the errors: an unknown crawl writes no file, a bad format is a usage error.
	code, stdout, _ = runMain(t, "export", "--state", state, sum.Crawl)
	if code != ExitOK || strings.Count(stdout, "\n") != 40 || !strings.HasPrefix(stdout, "{") {
		t.Errorf("crawl export to stdout: exit %d, %d lines", code, strings.Count(stdout, "\n"))
	}
	missing := filepath.Join(dir, "none.csv")
	if code, _, stderr := runMain(t, "export", "--state", state, "-o", missing, "no-such-crawl"); code != ExitFailed ||
		!strings.Contains(stderr, "crawl no-such-crawl has no records under records/crawl=no-such-crawl/") {
		t.Errorf("export of an unknown crawl: exit %d, %s", code, stderr)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("the folder holds %d files, want the 2 exports and no partial one", len(entries))
	}
	if code, _, stderr := runMain(t, "export", "--state", state, "--format", "parquet", sum.Crawl); code != ExitUsage ||
		!strings.Contains(stderr, "want jsonl or csv") {
		t.Errorf("--format parquet: exit %d, %s", code, stderr)
	}
}
