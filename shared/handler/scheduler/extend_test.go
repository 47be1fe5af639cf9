package scheduler_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/handler/scheduler"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// growEnv is a schedule handler that extends running crawls, and a seed file's versions.
type growEnv struct {
	*env
	key string
}

func newGrowEnv(t *testing.T) *growEnv {
	e := newEnvWith(t, func(d *scheduler.Deps) {
		d.Progress, d.Extend = d.Links.(*crawlstate.Store), d.Links.(*crawlstate.Store)
	})
	return &growEnv{env: e, key: "seeds/grow.txt"}
}

// deliver puts body as the seed file's version, delivers its notification, and admits every Links
// message schedule sends for it. It returns the seed URLs sent, and whether the notification failed.
func (g *growEnv) deliver(version string, urls ...string) (sent []string, failed bool) {
	g.t.Helper()
	if urls != nil {
		g.put(g.key, strings.Join(urls, "\n")+"\n")
	}
	var ev events.S3Event
	ev.Records = make([]events.S3EventRecord, 1)
	ev.Records[0].EventName = "ObjectCreated:Put"
	ev.Records[0].S3.Bucket.Name, ev.Records[0].S3.Object.Key, ev.Records[0].S3.Object.Sequencer = "bucket", g.key, version
	raw, _ := json.Marshal(ev)
	ctx := context.Background()
	resp, err := g.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: "n-" + version, Body: string(raw),
		Attributes: map[string]string{"ApproximateReceiveCount": "1"}}}})
	if err != nil {
		g.t.Fatal(err)
	}
	for _, m := range take(g.t, g.env) {
		l, err := message.DecodeLinks(m)
		if err != nil {
			continue // a drain check
		}
		sent = append(sent, l.URLs...)
		if resp, err := g.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: "l", Body: m,
			Attributes: map[string]string{"ApproximateReceiveCount": "1"}}}}); err != nil || len(resp.BatchItemFailures) > 0 {
			g.t.Fatalf("admit: %v, %v", resp.BatchItemFailures, err)
		}
	}
	return sent, len(resp.BatchItemFailures) > 0
}

func (g *growEnv) seen(crawl string) int64 {
	g.t.Helper()
	c, err := g.state.Counters(context.Background(), crawl)
	if err != nil {
		g.t.Fatal(err)
	}
	return c.Seen
}

func (g *growEnv) exists(crawl string) bool {
	g.t.Helper()
	_, err := g.state.ChecksOf(context.Background(), crawl)
	if err != nil && !errors.Is(err, table.ErrNotFound) {
		g.t.Fatal(err)
	}
	return err == nil
}

func seedURLs(from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("http://grow.test/p/%d", i))
	}
	return out
}

// TestAGrowingSeedFileExtendsItsRunningCrawl: lines appended to a URL list whose crawl has not
// ended join that crawl, and only they are read and sent; a version that changes earlier lines is
// read whole, and admission drops what the crawl has; once the crawl has ended, a new version
// starts a crawl of its own that recrawls it, and a notification of a version taken in before the
// end, delivered again, does nothing.
func TestAGrowingSeedFileExtendsItsRunningCrawl(t *testing.T) {
	g := newGrowEnv(t)
	ctx := context.Background()
	crawl := scheduler.CrawlID("bucket", g.key, "v1")
	if sent, _ := g.deliver("v1", seedURLs(1, 3)...); len(sent) != 3 || g.seen(crawl) != 3 {
		t.Fatalf("the first version sent %v and admitted %d; want its 3 seeds", sent, g.seen(crawl))
	}

	sent, failed := g.deliver("v2", seedURLs(1, 5)...)
	if failed || strings.Join(sent, " ") != strings.Join(seedURLs(4, 5), " ") {
		t.Fatalf("two lines appended sent %v (failed %v); want the two new seeds alone", sent, failed)
	}
	if g.seen(crawl) != 5 || g.exists(scheduler.CrawlID("bucket", g.key, "v2")) {
		t.Fatalf("after the extension the crawl has %d URLs, and a crawl of v2 exists: %v; want 5 in the one crawl", g.seen(crawl),
			g.exists(scheduler.CrawlID("bucket", g.key, "v2")))
	}
	var r scheduler.SeedReport
	raw, err := g.blobs.Get(ctx, scheduler.ReportsPrefix+crawl+"/seeds.json")
	if err != nil || json.Unmarshal(raw, &r) != nil || r.Accepted != 5 || r.ExtendedBy != "v2" || r.Reading {
		t.Fatalf("seed report %+v (%v); want 5 accepted, extended by v2", r, err)
	}

	edited := append([]string{"http://grow.test/first"}, seedURLs(2, 6)...)
	if sent, _ := g.deliver("v3", edited...); len(sent) != len(edited) || g.seen(crawl) != 7 {
		t.Fatalf("an edited version sent %d seeds and the crawl has %d URLs; want all %d sent and 2 new admitted", len(sent), g.seen(crawl), len(edited))
	}
	if ch, err := g.state.ChecksOf(ctx, crawl); err != nil || ch.Extending || ch.Extended != "v3" {
		t.Fatalf("the crawl reads %+v (%v); want v3 taken in whole", ch, err)
	}

	if _, err := g.state.DecideEnd(ctx, crawl, "test", `{}`); err != nil {
		t.Fatal(err)
	}
	if sent, _ := g.deliver("v3"); len(sent) != 0 || g.exists(scheduler.CrawlID("bucket", g.key, "v3")) {
		t.Fatalf("v3's notification again after the end sent %v, or started a crawl; want nothing", sent)
	}
	next := scheduler.CrawlID("bucket", g.key, "v4")
	if sent, _ := g.deliver("v4", seedURLs(1, 8)...); len(sent) != 8 || g.seen(next) != 8 {
		t.Fatalf("a version after the end sent %d seeds, crawl %s admitted %d; want a crawl of its own with all 8", len(sent), next, g.seen(next))
	}
	raw, err = g.blobs.Get(ctx, scheduler.ReportsPrefix+next+"/seeds.json")
	if err != nil || json.Unmarshal(raw, &r) != nil || r.Previous != crawl {
		t.Fatalf("the new crawl's report %+v (%v); want it to recrawl %s", r, err, crawl)
	}
}

// TestAnExtensionWaitsForTheFirstReading: a version that comes while the crawl still reads the one
// before in chunks fails, to be delivered again, and marks nothing that would hold the crawl's end.
func TestAnExtensionWaitsForTheFirstReading(t *testing.T) {
	g := newGrowEnv(t)
	ctx := context.Background()
	crawl := scheduler.CrawlID("bucket", g.key, "v1")
	g.deliver("v1", seedURLs(1, 3)...)
	// The first reading as it is between two chunks: progress with no digest, its report reading.
	if _, err := g.state.SaveSeedProgress(ctx, crawl, mustProgress(t, g.state, crawl), crawlstate.SeedProgress{Offset: 10, Line: 1}); err != nil {
		t.Fatal(err)
	}
	var r scheduler.SeedReport
	raw, _ := g.blobs.Get(ctx, scheduler.ReportsPrefix+crawl+"/seeds.json")
	_ = json.Unmarshal(raw, &r)
	r.Reading = true
	raw, _ = json.Marshal(r)
	g.put(scheduler.ReportsPrefix+crawl+"/seeds.json", string(raw))

	sent, failed := g.deliver("v2", seedURLs(1, 4)...)
	if !failed || len(sent) != 0 {
		t.Fatalf("a version during the first reading: failed %v, sent %v; want a failure, to come again", failed, sent)
	}
	if ch, err := g.state.ChecksOf(ctx, crawl); err != nil || ch.Extending {
		t.Fatalf("the crawl reads %+v (%v); want it not marked", ch, err)
	}
}

func mustProgress(t *testing.T, st *crawlstate.Store, crawl string) crawlstate.SeedProgress {
	t.Helper()
	p, err := st.SeedProgress(context.Background(), crawl)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
