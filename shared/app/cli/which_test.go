package cli

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/handler/scheduler"
)

// TestACrawlWithAPageLeftToParseHasNotEnded: a run interrupted after its last fetch leaves every
// URL it admitted ended and the parse messages of its last pages queued. The next run must resume
// that crawl, not call it ended: those pages' links are still to come. The crawl's items are the
// oracle: once the page's parse mark is written, the same crawl has ended.
func TestACrawlWithAPageLeftToParseHasNotEnded(t *testing.T) {
	be, err := OpenEmbedded(filepath.Join(t.TempDir(), "st"))
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	ctx := context.Background()
	st := crawlstate.New(be.Table)
	key, version := "seeds/seeds.txt", "v1"
	crawl := scheduler.CrawlID(be.Bucket, key, version)
	if err := st.MarkStarted(ctx, crawl); err != nil {
		t.Fatal(err)
	}
	const u = "http://127.0.0.1:1/"
	if _, err := st.Admit(ctx, crawl, "k", u, u, 0, "seed"); err != nil {
		t.Fatal(err)
	}
	claimed, err := st.Claim(ctx, crawl, "k", "o", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	page := crawlstate.Page{WARCKey: "pages/" + crawl + "/f.warc.gz", Length: 1, Msg: "the-parse-message", FetchedAt: time.Now()}
	if ok, err := st.FinishFetched(ctx, crawl, "k", "o", claimed.State, page); !ok || err != nil {
		t.Fatalf("FinishFetched = %v, %v", ok, err)
	}
	p, err := chooseCrawl(ctx, st, be.Bucket, key, version, false)
	if err != nil {
		t.Fatal(err)
	}
	if p.ended || p.id != crawl {
		t.Fatalf("with its page not parsed: %+v, want crawl %s resumed", p, crawl)
	}
	if _, err := st.MarkMessageParsedIn(ctx, crawl, "the-parse-message", ""); err != nil {
		t.Fatal(err)
	}
	if p, err = chooseCrawl(ctx, st, be.Bucket, key, version, false); err != nil || !p.ended || p.id != crawl {
		t.Errorf("with its page parsed: %+v, %v; want crawl %s ended", p, err, crawl)
	}
}
