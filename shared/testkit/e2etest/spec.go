package e2etest

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/records"
	"github.com/crawlstack/crawlstack/shared/demo/demosite"
)

// specAgent is the User-Agent the scenario's spec sends, in place of the stack's.
const specAgent = "specbot/2.0 (+https://example.com/specbot)"

// CrawlFile starts the crawl of a seed file (a URL list or a spec) called name and runs it to its
// end with fresh handlers of the test's configuration; it returns the crawl's id.
func (h *Harness) CrawlFile(name, body string, concurrency int) string {
	h.T.Helper()
	ctx := context.Background()
	crawl, err := h.Start(ctx, h.Res, name, []byte(body))
	if err != nil {
		h.T.Fatal(err)
	}
	if err := h.Run(ctx, crawl, h.Config(), h.Ports(), h.Queue, concurrency); err != nil {
		h.T.Fatal(err)
	}
	return crawl
}

// SpecYAML is a crawl spec of the site with one field of each kind of extraction, an item rule
// that yields an item per link, its own User-Agent and an extra header.
func (h *Harness) SpecYAML() string {
	return fmt.Sprintf(`version: 1
seeds:
  - %s
user_agent: %q
headers:
  X-Crawl-Spec: yes-it-is
extract:
  heading: {css: h1}
  price: {css: .price, regexp: '\$([0-9]+\.[0-9]+)'}
  tags: {css: span.tag, all: true}
  product: {jsonld: Product}
  og: {opengraph: true}
  description: {meta: description}
  nowhere: {css: .no-such-element}
items:
  links:
    css: ul > li
    fields:
      text: {xpath: 'normalize-space(a)'}
      href: {xpath: a/@href, url: true}
  nothing: {css: table, fields: {x: {css: td}}}
`, h.Site.URL, specAgent)
}

// CheckSpecExtracts crawls the site from a spec with extraction rules: every page is recorded
// with the fields the site shows (demosite.Product is the oracle), a field that finds nothing is
// null, and every request, robots.txt's too, carried the spec's User-Agent and header.
func (h *Harness) CheckSpecExtracts(concurrency int) {
	t := h.T
	t.Helper()
	crawl := h.CrawlFile("products.yaml", h.SpecYAML(), concurrency)
	h.CheckNothingLost(crawl)
	recs := h.RecordsOf(crawl)
	for i := 0; i < h.Site.Pages; i++ {
		r, ok := recs[h.Site.PageURL(i)]
		if !ok {
			t.Errorf("no record for page %d", i)
			continue
		}
		p := demosite.Product(i)
		tags := make([]any, len(p.Tags))
		for j, tag := range p.Tags {
			tags[j] = tag
		}
		want := map[string]any{
			"heading":     fmt.Sprintf("Demo page %d", i),
			"price":       p.Price,
			"tags":        tags,
			"product":     map[string]any{"@context": "https://schema.org", "@type": "Product", "name": p.Name, "sku": p.SKU},
			"og":          map[string]any{"title": p.Name, "type": "product"},
			"description": p.Name + ", " + p.SKU,
			"nowhere":     nil,
		}
		if !reflect.DeepEqual(r.Data, want) {
			t.Errorf("page %d: data %#v\nwant %#v", i, r.Data, want)
		}
		if _, ok := r.Data["nowhere"]; !ok {
			t.Errorf("page %d: the field that finds nothing is absent, want null", i)
		}
		if len(r.DataErrors) != 0 {
			t.Errorf("page %d: data errors %v", i, r.DataErrors)
		}
		checkLinkItems(t, i, r)
	}
	agents := h.Site.Agents()
	for a, n := range agents {
		if a != specAgent+"|yes-it-is" {
			t.Errorf("%d requests came as %q, want the spec's agent and header", n, a)
		}
	}
	if n := agents[specAgent+"|yes-it-is"]; n < h.Site.Pages+1 || strings.Contains(fmt.Sprint(agents), "crawlstack/") {
		t.Errorf("requests by agent %v, want the site's %d pages and robots.txt with the spec's", agents, h.Site.Pages)
	}
}

// checkLinkItems checks the items of SpecYAML's rule against the record's outLinks, which the link
// extractor found on its own: an item per link, in the page's order, its href resolved as the
// link is; and no entry for the rule that selects nothing.
func checkLinkItems(t testing.TB, i int, r records.Record) {
	t.Helper()
	list, _ := r.Items["links"].([]any)
	var hrefs []string
	for _, it := range list {
		m, _ := it.(map[string]any)
		href, _ := m["href"].(string)
		text, _ := m["text"].(string)
		if text == "" {
			t.Errorf("page %d: item %v has no text", i, it)
		}
		hrefs = append(hrefs, href)
	}
	if !slices.Equal(hrefs, r.OutLinks) {
		t.Errorf("page %d: the link items' hrefs %v, want the record's links %v", i, hrefs, r.OutLinks)
	}
	if _, ok := r.Items["nothing"]; ok || len(r.Items) != 1 {
		t.Errorf("page %d: items %v, want the links' alone", i, r.Items)
	}
}
