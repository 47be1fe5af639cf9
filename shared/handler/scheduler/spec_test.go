package scheduler_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawl/specstore"
	"github.com/crawlstack/crawlstack/shared/handler/scheduler"
)

func (e *env) report(crawl string) scheduler.SeedReport {
	e.t.Helper()
	b, err := e.blobs.Get(context.Background(), scheduler.ReportsPrefix+crawl+"/seeds.json")
	if err != nil {
		e.t.Fatal(err)
	}
	var r scheduler.SeedReport
	if err := json.Unmarshal(b, &r); err != nil {
		e.t.Fatal(err)
	}
	return r
}

func TestASpecStartsItsCrawlWithItsSettings(t *testing.T) {
	e := newEnv(t)
	e.put("seeds/shop.yaml", "version: 1\nseeds:\n  - http://127.0.0.1:9/a\n  - http://127.0.0.1:9/b\nmax_depth: 2\nextract:\n  h: {css: h1}\n")
	if err := e.h.StartCrawl(context.Background(), "seeds/shop.yaml", "shop-1"); err != nil {
		t.Fatal(err)
	}
	crawls, _ := e.links()
	if got := strings.Join(crawls["shop-1"], " "); got != "http://127.0.0.1:9/a http://127.0.0.1:9/b" {
		t.Errorf("seeds sent %q", got)
	}
	// The settings are where every handler reads them, and give the spec's crawl.
	c, err := specstore.New(e.blobs, crawlspec.Crawl{}).For(context.Background(), "shop-1")
	if err != nil {
		t.Fatal(err)
	}
	if c.Rules.MaxDepth != 2 || c.Fields.Len() != 1 {
		t.Errorf("stored settings give depth %d and %d fields", c.Rules.MaxDepth, c.Fields.Len())
	}
	if r := e.report("shop-1"); !r.Spec || r.Accepted != 2 || r.Errors != 0 {
		t.Errorf("report %+v", r)
	}
}

func TestABadSpecStartsNothingAndReportsItsLines(t *testing.T) {
	e := newEnv(t)
	e.put("seeds/bad.yaml", "version: 1\nseeds: [http://127.0.0.1:9/]\nmax_pages: lots\nextract:\n  p: {css: 'p[['}\n")
	if err := e.h.StartCrawl(context.Background(), "seeds/bad.yaml", "bad-1"); err != nil {
		t.Fatal(err)
	}
	if crawls, _ := e.links(); len(crawls) != 0 {
		t.Errorf("a bad spec sent seeds: %v", crawls)
	}
	r := e.report("bad-1")
	if r.Errors != 2 || len(r.Bad) != 2 || r.Bad[0].Line != 3 || r.Bad[1].Line != 5 ||
		!strings.Contains(r.Bad[0].Error, "max_pages: want a whole number") || !strings.Contains(r.Bad[1].Error, "extract.p.css") {
		t.Errorf("report %+v", r)
	}
	if _, err := e.blobs.Get(context.Background(), specstore.Key("bad-1")); err == nil {
		t.Error("a bad spec's settings were stored")
	}
}

func TestAURLListStillWorksAndStoresNoSpec(t *testing.T) {
	e := newEnv(t)
	e.put("seeds/list.txt", "http://127.0.0.1:9/\n")
	if err := e.h.StartCrawl(context.Background(), "seeds/list.txt", "list-1"); err != nil {
		t.Fatal(err)
	}
	if crawls, _ := e.links(); len(crawls["list-1"]) != 1 {
		t.Errorf("seeds sent %v", crawls)
	}
	c, err := specstore.New(e.blobs, crawlspec.Crawl{MaxPages: 7}).For(context.Background(), "list-1")
	if err != nil || c.MaxPages != 7 || c.Fields.Len() != 0 {
		t.Errorf("a URL list's crawl has %+v, %v; want the stack's settings", c, err)
	}
	if r := e.report("list-1"); r.Spec {
		t.Errorf("report %+v says spec", r)
	}
}

func TestTheTickPassesOverASpecThatAsksForNoRecrawl(t *testing.T) {
	e := newEnv(t)
	e.put("seeds/once.yaml", "version: 1\nseeds: [http://127.0.0.1:9/once]\nrecrawl: false\n")
	e.put("seeds/again.yaml", "version: 1\nseeds: [http://127.0.0.1:9/again]\n")
	if err := e.h.Tick(context.Background(), events.EventBridgeEvent{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	crawls, _ := e.links()
	var urls []string
	for _, u := range crawls {
		urls = append(urls, u...)
	}
	if strings.Join(urls, " ") != "http://127.0.0.1:9/again" {
		t.Errorf("the tick crawled %v, want only the spec that recrawls", urls)
	}
	// A spec dropped into seeds/ starts its crawl whatever its recrawl says.
	if err := e.h.StartCrawl(context.Background(), "seeds/once.yaml", "once-1"); err != nil {
		t.Fatal(err)
	}
	if crawls, _ := e.links(); len(crawls["once-1"]) != 1 {
		t.Errorf("the dropped spec sent %v", crawls)
	}
}
