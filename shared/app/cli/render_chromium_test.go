package cli

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/web/render"
	"github.com/crawlstack/crawlstack/shared/demo/jssite"
	"github.com/crawlstack/crawlstack/shared/testkit/e2etest"
)

// chromiumOrSkip is the browser crawl run would open, or a skip without one (a failure under
// CRAWL_TEST_REQUIRE_CHROMIUM=1, as make test sets).
func chromiumOrSkip(t *testing.T) *render.OnDemand {
	t.Helper()
	if _, err := render.FindBrowser(""); err != nil {
		if os.Getenv("CRAWL_TEST_REQUIRE_CHROMIUM") == "1" {
			t.Fatalf("CRAWL_TEST_REQUIRE_CHROMIUM=1 and no browser: %v", err)
		}
		t.Skip(err)
	}
	b, closeBrowser := openBrowser("", e2etest.QuietLog())
	t.Cleanup(closeBrowser)
	return b.(*render.OnDemand)
}

// TestARenderingCrawlWithChromiumReachesTheJSSite: the JS site, whose links and text only its
// scripts build, is crawled whole on the embedded backend with render on and the real browser
// (each page's links as the site lists them, each record rendered); with render off, the crawl
// records the seed alone, with no link, and starts no browser.
func TestARenderingCrawlWithChromiumReachesTheJSSite(t *testing.T) {
	browser := chromiumOrSkip(t)
	site := jssite.New(jssite.Options{Pages: 13, Links: 3})
	defer site.Close()
	crawlJS := func(section string) map[string]string {
		h := newHarness(t, 1, 1, 60*time.Second)
		ctx := context.Background()
		crawl, err := h.Start(ctx, h.Res, "app.yaml", fmt.Appendf(nil, "version: 1\nseeds: [%s/]\n%s", site.URL(), section))
		if err != nil {
			t.Fatal(err)
		}
		ports := h.Ports()
		ports.Browser = browser
		if err := h.Run(ctx, crawl, h.Config(), ports, h.Queue, 4); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for u, r := range h.RecordsOf(crawl) {
			got[u] = fmt.Sprintf("rendered=%v links=%v", r.Rendered, r.OutLinks)
		}
		return got
	}

	off := crawlJS("")
	if want := map[string]string{site.PageURL(0): "rendered=false links=[]"}; fmt.Sprint(off) != fmt.Sprint(want) {
		t.Errorf("render off: records %v, want %v", off, want)
	}
	if browser.Started() {
		t.Error("render off started the browser")
	}

	on := crawlJS("render:\n  when_fewer_links: 1\n  wait:\n    network_idle: true\n")
	want := map[string]string{}
	for i := range site.Pages() {
		want[site.PageURL(i)] = fmt.Sprintf("rendered=true links=%v", site.Links(i))
	}
	if fmt.Sprint(on) != fmt.Sprint(want) {
		t.Errorf("render on: records\n  %v\nwant\n  %v", on, want)
	}
	for i := range site.Pages() {
		if n := site.Hits(jssite.Path(i)); n != 2 && i == 0 || n != 1 && i > 0 {
			t.Errorf("page %d fetched %d times: want once a crawl (the browser never asks)", i, n)
		}
	}
	if ua := site.UserAgents(); slices.ContainsFunc(ua, func(s string) bool { return strings.Contains(s, "HeadlessChrome") }) {
		t.Errorf("the site saw the browser's own User-Agent: %q", ua)
	}
}
