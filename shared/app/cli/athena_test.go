package cli

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/demo/demosite"
	"github.com/crawlstack/crawlstack/shared/testkit/athenaduck"
	"github.com/crawlstack/crawlstack/shared/testkit/e2etest"
)

// The stack's Athena table, read by DuckDB with the table's declared columns and partition layout
// (Athena cannot run here), answers queries about two crawls as their records do: the crawl's
// Go-read records and the demo site's own data are the oracles.
func TestTheAthenaTableAnswersQueriesAboutACrawl(t *testing.T) {
	h := newHarness(t, 12, 3, 30*time.Second)
	crawl := h.CrawlFile("products.yaml", h.SpecYAML(), 4)
	other := h.CrawlFile("other.txt", h.Site.PageURL(5)+"\n", 2)
	recs := h.RecordsOf(crawl)
	res := athenaduck.Query(t, h.be.Where(""),
		fmt.Sprintf(`SELECT crawl, status, count(DISTINCT url) AS pages FROM records WHERE crawl IN ('%s', '%s') GROUP BY crawl, status ORDER BY crawl`, crawl, other),
		fmt.Sprintf(`SELECT url, json_extract_string(data, '$.price') AS price, warc.key AS key, dt FROM records WHERE crawl = '%s' ORDER BY url`, crawl),
		fmt.Sprintf(`SELECT r.url, json_extract_string(p, '$.href') AS href FROM records r, UNNEST(CAST(json_extract(r.items, '$.links') AS JSON[])) AS t(p) WHERE r.crawl = '%s'`, crawl),
		fmt.Sprintf(`SELECT count(*) AS n FROM records WHERE crawl = '%s' AND len(outlinks) > 0 AND finalurl IS NOT NULL AND fetchedat IS NOT NULL`, crawl))

	otherPages := len(h.RecordsOf(other))
	wantCounts := []map[string]any{{"crawl": crawl, "status": 200, "pages": h.Site.Pages},
		{"crawl": other, "status": 200, "pages": otherPages}}
	slices.SortFunc(wantCounts, func(a, b map[string]any) int { return strings.Compare(a["crawl"].(string), b["crawl"].(string)) })
	if !equalRows(res[0], wantCounts) {
		t.Errorf("pages by crawl and status: %v, want %v", res[0], wantCounts)
	}

	day := regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
	if len(res[1]) != h.Site.Pages {
		t.Errorf("%d rows of the crawl, want %d", len(res[1]), h.Site.Pages)
	}
	for _, row := range res[1] {
		url, _ := row["url"].(string)
		r, ok := recs[url]
		if !ok {
			t.Errorf("a row for %s, which has no record", url)
			continue
		}
		var i int
		if _, err := fmt.Sscanf(url, h.Site.URL+"p/%d", &i); err != nil && url != h.Site.URL {
			t.Errorf("row url %s is no page of the site", url)
		}
		if row["price"] != demosite.Product(i).Price || row["key"] != r.WARC.Key || !day.MatchString(fmt.Sprint(row["dt"])) {
			t.Errorf("row %v, want price %s, WARC key %s and a day", row, demosite.Product(i).Price, r.WARC.Key)
		}
	}

	hrefs := map[string][]string{}
	for _, row := range res[2] {
		hrefs[row["url"].(string)] = append(hrefs[row["url"].(string)], row["href"].(string))
	}
	for url, r := range recs {
		got, want := slices.Sorted(slices.Values(hrefs[url])), slices.Sorted(slices.Values(r.OutLinks))
		if !slices.Equal(got, want) {
			t.Errorf("%s: the unnested items' hrefs %v, want its links %v", url, got, want)
		}
	}
	if n := res[3][0]["n"]; fmt.Sprint(n) != fmt.Sprint(h.Site.Pages) {
		t.Errorf("%v rows with links, a final URL and a time (the camelCase keys read as the lower-case columns), want %d", n, h.Site.Pages)
	}
}

func equalRows(got, want []map[string]any) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		for k, v := range want[i] {
			if fmt.Sprint(got[i][k]) != fmt.Sprint(v) { // DuckDB gives a BIGINT as text
				return false
			}
		}
	}
	return true
}

// The Athena table's pdf, text and texttruncated columns (record-columns.json), read by DuckDB
// with the table's declared types, answer for a crawl of PDF, JSON and text responses what the
// site served: pdfgen's document is the oracle of the PDF's row, the API's products of the
// unnested items.
func TestTheAthenaTableHoldsPDFAndTextColumns(t *testing.T) {
	h := newHarness(t, 1, 1, 30*time.Second)
	site := e2etest.NewContentSite(t)
	crawl := h.CrawlFile("content.yaml", site.ContentSpec(), 4)
	res := athenaduck.Query(t, h.be.Where(""),
		fmt.Sprintf(`SELECT title, pdf.author AS author, pdf.created AS created, pdf.pages AS pages, text, texttruncated FROM records WHERE crawl = '%s' AND pdf IS NOT NULL`, crawl),
		fmt.Sprintf(`SELECT json_extract_string(p, '$.name') AS name FROM records r, UNNEST(CAST(json_extract(r.items, '$.products') AS JSON[])) AS t(p) WHERE r.crawl = '%s' ORDER BY name`, crawl),
		fmt.Sprintf(`SELECT text FROM records WHERE crawl = '%s' AND contenttype LIKE 'text/plain%%'`, crawl))
	want := site.PDF
	if len(res[0]) != 1 {
		t.Fatalf("%d rows with a pdf, want 1 (the poison PDF has none): %v", len(res[0]), res[0])
	}
	row := res[0][0]
	if row["title"] != want.Title || row["author"] != want.Author || row["created"] != want.Created.Format(time.RFC3339) ||
		fmt.Sprint(row["pages"]) != fmt.Sprint(len(want.Pages)) || row["texttruncated"] == true ||
		!strings.Contains(fmt.Sprint(row["text"]), want.Pages[1][0]) {
		t.Errorf("the PDF's row %v, want %+v", row, want)
	}
	if !equalRows(res[1], []map[string]any{{"name": "Glass kettle"}, {"name": "Steel kettle"}}) {
		t.Errorf("the API's unnested items %v, want its two products", res[1])
	}
	if len(res[2]) != 1 || res[2][0]["text"] != "Café opening hours\nMonday to Friday\n" {
		t.Errorf("the text file's row %v", res[2])
	}
}
