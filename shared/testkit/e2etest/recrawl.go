package e2etest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/app/pipeline"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/specstore"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile/warctest"
	"github.com/crawlstack/crawlstack/shared/demo/demosite"
	"github.com/crawlstack/crawlstack/shared/handler/scheduler"
)

// RecrawlSeedFile is the seed file CheckRecrawl drops, as a user would into seeds/.
const RecrawlSeedFile = "recrawl.txt"

// CheckRecrawl crawls the site (which must serve validators: Site.Validators), changes a tenth of
// its pages, and recrawls it as the stack's EventBridge rule does (a scheduled tick to schedule,
// which recrawls every seed file). The recrawl names the first crawl as its previous one, asks for
// every page once with its validators, and is answered 304 for the unchanged pages that send
// validators; the unchanged pages without validators come whole, with the same payload digest.
// Every unchanged page gets a revisit record, which warcio.js reads and resolves against the
// first crawl's files, and a record marked unchanged with the first crawl's title and links: the
// recrawl reaches every page, nothing nofollow or robots.txt forbids, and loses nothing.
func (h *Harness) CheckRecrawl(concurrency int, bare, changed func(i int) bool) {
	t := h.T
	t.Helper()
	ctx := context.Background()
	for i := 0; i < h.Site.Pages; i++ {
		if bare(i) {
			h.Site.Bare(i)
		}
	}
	first := h.CrawlFile(RecrawlSeedFile, h.Site.URL+"\n", concurrency)
	h.CheckNothingLost(first)
	full := h.Site.Traffic()
	h.checkResponses(first, crawlstate.Responses{Statuses: map[int]int64{200: int64(h.Site.Pages)}, Bytes: full.Bytes})
	want := map[string]bool{} // URL -> unchanged
	notModified := 0
	for i := 0; i < h.Site.Pages; i++ {
		if changed(i) {
			h.Site.Change(i, false)
		} else if !bare(i) {
			notModified++
		}
		want[h.Site.PageURL(i)] = !changed(i)
	}
	h.Site.ResetTraffic()

	tick := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	second := h.Tick(ctx, tick, RecrawlSeedFile)
	if err := h.Run(ctx, second, h.Config(), h.Ports(), h.Queue, concurrency); err != nil {
		t.Fatal(err)
	}
	h.CheckNothingLost(second)
	if got := h.previousOf(ctx, second); got != first {
		t.Errorf("the recrawl %s names %q as its previous crawl, want %s", second, got, first)
	}
	again := h.Site.Traffic()
	t.Logf("full crawl: %+v; recrawl: %+v", full, again)
	if again.Requests != h.Site.Pages || again.NotModified != notModified || again.Bytes >= full.Bytes {
		t.Errorf("the recrawl made %+v: want each of the %d pages asked for once, %d answered 304, and fewer bytes than the full crawl's %d",
			again, h.Site.Pages, notModified, full.Bytes)
	}

	before, after := h.RecordsOf(first), h.RecordsOf(second)
	unchanged := 0
	for u, same := range want {
		r, old := after[u], before[u]
		if r.Unchanged != same {
			t.Errorf("%s: record unchanged=%v, want %v", u, r.Unchanged, same)
		}
		if same {
			unchanged++
			if r.Title != old.Title || !slices.Equal(r.OutLinks, old.OutLinks) || r.Digest != old.Digest || r.Digest == "" {
				t.Errorf("%s: the unchanged record %q %v %s differs from the first crawl's %q %v %s", u, r.Title, r.OutLinks,
					r.Digest, old.Title, old.OutLinks, old.Digest)
			}
		} else if r.Digest == old.Digest {
			t.Errorf("%s changed but its digest is the first crawl's", u)
		}
	}

	h.checkResponses(second, crawlstate.Responses{Statuses: statusCounts(h.Site.Pages-notModified, notModified),
		Bytes: again.Bytes, Changed: int64(h.Site.Pages - unchanged), Unchanged: int64(unchanged)})

	files := h.warcFiles(first, second)
	got := warctest.Check(t, files...)
	if got.Revisits != unchanged || got.RevisitsResolved != unchanged || got.Responses != 2*h.Site.Pages-unchanged {
		t.Errorf("warcio.js read %+v: want %d revisit records, each resolved against the first crawl's response records, and %d responses",
			got, unchanged, 2*h.Site.Pages-unchanged)
	}
}

// checkResponses checks the crawl's counts of responses (its summary's and end event's) against
// what the site says it answered.
func (h *Harness) checkResponses(crawl string, want crawlstate.Responses) {
	h.T.Helper()
	c, err := crawlstate.New(h.Table).Counters(context.Background(), crawl)
	if err != nil {
		h.T.Fatal(err)
	}
	got := c.Responses
	if !maps.Equal(got.Statuses, want.Statuses) || got.Bytes != want.Bytes || got.Changed != want.Changed || got.Unchanged != want.Unchanged {
		h.T.Errorf("crawl %s counted responses %+v; the site answered %+v", crawl, got, want)
	}
}

// statusCounts are the counts of ok 200s and notModified 304s, those not zero.
func statusCounts(ok, notModified int) map[int]int64 {
	m := map[int]int64{}
	if ok > 0 {
		m[200] = int64(ok)
	}
	if notModified > 0 {
		m[304] = int64(notModified)
	}
	return m
}

// Tick sends schedule the EventBridge "Scheduled Event" of the stack's recrawl rule, at the time
// at, as Lambda would, and returns the id of the crawl it starts for the seed file called name.
func (h *Harness) Tick(ctx context.Context, at time.Time, name string) string {
	h.T.Helper()
	prefix := h.SeedsPrefix
	if prefix == "" {
		prefix = scheduler.SeedsPrefix
	}
	cfg := h.Config()
	cfg.RecrawlPrefix = prefix // where the backend's StartCrawl drops seed files
	hs, err := pipeline.New(cfg, h.Ports(), h.handlerLog())
	if err != nil {
		h.T.Fatal(err)
	}
	defer hs.Close()
	raw, err := json.Marshal(events.EventBridgeEvent{Version: "0", ID: "tick", DetailType: "Scheduled Event", Source: "aws.events",
		Time: at, Region: "us-east-1", Detail: json.RawMessage(`{}`)})
	if err != nil {
		h.T.Fatal(err)
	}
	if _, err := hs.Schedule.Invoke(ctx, raw); err != nil {
		h.T.Fatalf("the recrawl tick: %v", err)
	}
	return scheduler.CrawlID("", prefix+name, "tick@"+at.UTC().Format(time.RFC3339))
}

// previousOf reads the crawl that crawl's stored settings name as its previous one.
func (h *Harness) previousOf(ctx context.Context, crawl string) string {
	h.T.Helper()
	b, err := h.Blobs.Get(ctx, specstore.Key(crawl))
	if err != nil {
		h.T.Fatal(err)
	}
	var s crawlspec.Settings
	if err := json.Unmarshal(b, &s); err != nil {
		h.T.Fatal(err)
	}
	return s.Previous
}

// warcFiles copies the WARC files of crawls and their indexes out of the blob store into a temp
// dir, for an independent reader, and returns their paths.
func (h *Harness) warcFiles(crawls ...string) []string {
	h.T.Helper()
	ctx := context.Background()
	dir := h.T.TempDir()
	var out []string
	for _, crawl := range crawls {
		sub := filepath.Join(dir, crawl)
		if err := os.Mkdir(sub, 0o755); err != nil {
			h.T.Fatal(err)
		}
		keys, err := h.Blobs.List(ctx, "pages/"+crawl+"/")
		if err != nil {
			h.T.Fatal(err)
		}
		for _, k := range keys {
			if !strings.HasSuffix(k, ".warc.gz") {
				continue
			}
			name := filepath.Join(sub, path.Base(k)) // the name its warcinfo record gives
			for suffix, dst := range map[string]string{"": name, warcfile.IndexSuffix: name + warcfile.IndexSuffix} {
				b, err := h.Blobs.Get(ctx, k+suffix)
				if err != nil {
					h.T.Fatal(err)
				}
				if err := os.WriteFile(dst, b, 0o644); err != nil {
					h.T.Fatal(err)
				}
			}
			out = append(out, name)
		}
	}
	return out
}

// CheckRecrawlSkipsBySitemap crawls a site whose orphan pages only its sitemaps list, with their
// lastmod (NewSiteWithOrphans), from a spec that reads sitemaps; then changes one orphan page
// (whose lastmod moves to the time of the change) and recrawls the spec through the scheduled
// tick. The orphans whose lastmod is older than the first crawl are not asked for at all, yet each
// has a record marked unchanged with its first record's title; the changed one is fetched again.
func (h *Harness) CheckRecrawlSkipsBySitemap(concurrency int) {
	t := h.T
	t.Helper()
	ctx := context.Background()
	orphans := h.Site.Orphans
	if orphans < 2 {
		t.Fatal("the site needs orphan pages: build it with NewSiteWithOrphans")
	}
	const name = "recrawl-sitemaps.yaml"
	first := h.CrawlFile(name, fmt.Sprintf("version: 1\nseeds: [%s]\nsitemaps: true\n", h.Site.URL), concurrency)
	all := h.Site.Pages + orphans + 5 // the pages, the orphans, and the five files that list them
	h.checkInvariants(first, true, all)
	h.Site.Change(1, true)
	h.Site.ResetTraffic()
	second := h.Tick(ctx, time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC), name)
	if err := h.Run(ctx, second, h.Config(), h.Ports(), h.Queue, concurrency); err != nil {
		t.Fatal(err)
	}
	h.checkInvariants(second, true, all)
	before, after := h.RecordsOf(first), h.RecordsOf(second)
	base := strings.TrimSuffix(h.Site.URL, "/")
	for i := 0; i < orphans; i++ {
		u, hits := base+demosite.OrphanPath(i), h.Site.Hits(demosite.OrphanPath(i))
		r, old := after[u], before[u]
		switch {
		case i == 1 && (hits != 1 || r.Unchanged):
			t.Errorf("the changed orphan: asked for %d times, record unchanged=%v; want once, changed", hits, r.Unchanged)
		case i != 1 && (hits != 0 || !r.Unchanged || r.Title != old.Title || r.Digest != old.Digest || r.Title == ""):
			t.Errorf("orphan %d: asked for %d times, record %+v; want no request and the first record (%q), unchanged", i, hits, r, old.Title)
		}
	}
}
