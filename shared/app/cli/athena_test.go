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
