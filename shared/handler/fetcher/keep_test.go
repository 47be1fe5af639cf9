package fetcher_test

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/scope"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile/warctest"
	"github.com/crawlstack/crawlstack/shared/handler/fetcher"
)

// A page of a type the crawl's spec keeps (keep: [application/json]) is stored in the WARC and
// sent to parse, fetched, where without keep it is skipped with class type (TestFetchOutcomes):
// warcio.js reads the file back, and the record holds the body the site sent.
func TestAKeptTypeIsStoredThoughNotParsed(t *testing.T) {
	e := newEnv(t, nil)
	spec := &crawlspec.Settings{Version: crawlspec.Version, Keep: []string{"image/*", "application/json"}}
	c, err := spec.Over(crawlspec.Crawl{Rules: scope.DefaultRules(), UserAgent: userAgent})
	if err != nil {
		t.Fatal(err)
	}
	e.h = e.handlerWith(func(d *fetcher.Deps) { d.Crawls = specCrawls{c} })
	if got := e.handle(e.record("msg-1", "/data.json", 1)); len(got) != 0 {
		t.Fatalf("BatchItemFailures = %v", got)
	}
	it := e.item("/data.json")
	if it.State != crawlstate.Fetched || it.Page == nil || it.Page.ContentType != "application/json" || it.Page.Status != 200 {
		t.Fatalf("url = %s/%s (%s), page %+v; want fetched and stored as application/json", it.State, it.Class, it.Detail, it.Page)
	}
	pm, page := e.onlyParseMessage()
	if pm.ContentType != "application/json" || string(page.Body) != `{"not":"html"}` {
		t.Errorf("parse message of %q with body %q, want application/json and the site's body", pm.ContentType, page.Body)
	}
	ctx := context.Background()
	dir := t.TempDir()
	for _, k := range []string{it.Page.WARCKey, it.Page.WARCKey + warcfile.IndexSuffix} {
		b, err := e.blobs.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, path.Base(k)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if sum := warctest.Check(t, filepath.Join(dir, path.Base(it.Page.WARCKey))); sum.Responses != 1 || sum.Resolved != 1 {
		t.Errorf("warcio.js saw %+v, want the kept page's response, found by the index", sum)
	}
}
