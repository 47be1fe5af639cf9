package stacke2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/aws/s3blob"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/finish"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
	"github.com/crawlstack/crawlstack/shared/demo/demosite"
	"github.com/crawlstack/crawlstack/shared/handler/scheduler"
	"github.com/crawlstack/crawlstack/shared/port/queue"
	"github.com/crawlstack/crawlstack/shared/testkit/e2etest"
	"github.com/crawlstack/crawlstack/shared/testkit/stackrun"
)

// runTimeout bounds the crawl: two crawls of a 30-page site at depth 3, each hop waiting out a
// batching window of the template (2 s by default).
const runTimeout = 2 * time.Minute

// TestIntegrationDeployedStack deploys the synthesized template onto the emulators and runs the
// crawl a user starts: a seed file uploaded under seeds/ makes S3 notify the schedule queue, and
// the real bootstraps under the runtime emulator crawl the loopback site through their queues,
// fed by the template's event source mappings (the slow lane's with them: the test template's host
// rate, 100/s, gives the site no runs, so the lane gets only its malformed message; the lane's
// crawl is TestIntegrationDeployedStackSlowLane's). A recrawl tick, as the EventBridge rule
// sends it once the upload's crawl has started, starts a second crawl of the same seed file
// meanwhile (an upload while a tick's crawl runs would join that crawl instead). A malformed message waits in
// each queue, and every batch of fetch and the lane is delivered twice (SQS delivers at least once). Both crawls
// must end with every invariant held, their pages in WARC files and their records in the
// bucket, and every AWS call of every function must be allowed by its role (TestIAM).
func TestIntegrationDeployedStack(t *testing.T) {
	d := deploy(t)
	site := e2etest.NewSite(t, 30, 6)
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()

	h, blobs := d.crawlHarness(t, site)

	for _, name := range d.crawlFunctions() {
		if err := d.looker.SendBatch(ctx, d.stack.Functions[name].Mapping.QueueURL,
			[]queue.Entry{{ID: "poison", Body: "{not a message of the crawler"}}); err != nil {
			t.Fatal(err)
		}
	}
	d.uploadSeed(ctx, t, site)
	dup := map[string]*duplicates{"fetch": {}, fetchSlow: {}}
	// The tick comes once the upload's crawl has started: a new version of a seed file whose crawl
	// runs joins that crawl (scheduler/extend.go), where a tick always starts a crawl of its own.
	ticks := &tickAfterTheUpload{blobs: blobs, tick: func() error { return tick(ctx, d) }}
	r := d.runner(func(name string, inv stackrun.Invoker) stackrun.Invoker {
		switch name {
		case "fetch", fetchSlow:
			dup[name].inv = inv
			return dup[name]
		case "schedule":
			ticks.inv = inv
			return ticks
		}
		return inv
	})
	if err := r.Run(ctx); err != nil {
		t.Fatalf("the crawl did not finish within %v: %v; pending:\n%s", runTimeout, err, h.Pending(""))
	}
	if !ticks.ticked || ticks.err != nil {
		t.Fatalf("the recrawl tick: sent %v, %v", ticks.ticked, ticks.err)
	}
	t.Logf("invocations: schedule %d, fetch %d (%d of them a batch delivered again), fetchslow %d (%d again), parse %d; batches %d, records %d, failed records %d",
		d.pools["schedule"].Invocations(), d.pools["fetch"].Invocations(), dup["fetch"].count(), invocations(d, fetchSlow),
		dup[fetchSlow].count(), d.pools["parse"].Invocations(), r.Stats.Batches.Load(), r.Stats.Records.Load(), r.Stats.Failures.Load())

	crawls := seedReports(t, blobs)
	if len(crawls) != 2 {
		t.Fatalf("seed reports = %v: want two crawls of seeds/x.txt, the upload's and the tick's", crawls)
	}
	for i := range site.Pages { // before checkWARC, which asks the site for each page again
		if n := site.Hits(demosite.Path(i)); n != len(crawls) {
			t.Errorf("page %d was served %d times, want once per crawl (%d)", i, n, len(crawls))
		}
	}
	ends := d.bus.ends(t)
	for _, c := range crawls {
		h.CheckNothingLost(c)
		checkWARC(t, h, c)
		// Each crawl's end was put once, with its pages, and the run ended with the last one.
		if e := ends[c]; len(e) != 1 || e[0].EventID != finish.EventID(c) || e[0].End != finish.EndDrained ||
			e[0].Counts.Fetched != int64(site.Pages) {
			t.Errorf("crawl %s: ends put %+v, want one, drained, with %d pages fetched", c, e, site.Pages)
		}
	}
	if len(ends) != len(crawls) {
		t.Errorf("ends put for crawls %v, want one for each of %v", ends, crawls)
	}
	for _, name := range d.crawlFunctions() {
		keys, err := blobs.List(ctx, "quarantine/"+name+"/")
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) != 1 {
			t.Errorf("quarantine/%s/ holds %d objects, want the one malformed message", name, len(keys))
		}
	}
	t.Run("IAM", func(t *testing.T) {
		checkIAM(t, d, "schedule", "fetch", "parse")
		if f := d.stack.Functions[fetchSlow]; f != nil {
			// The lane worked its malformed message only: every call allowed, its grants held by
			// TestIntegrationDeployedStackSlowLane, whose crawl takes the lane.
			checkAllowed(t, fetchSlow, f, d.calls(fetchSlow))
		}
	})
	t.Run("KeyOwnership", func(t *testing.T) { checkKeyOwnership(t, d, "schedule", "fetch", "parse") })
}

// invocations is how many times the named function was invoked; 0 when the template has none.
func invocations(d *deployment, name string) int64 {
	if p := d.pools[name]; p != nil {
		return p.Invocations()
	}
	return 0
}

// tick invokes schedule as the template's EventBridge rule does when it is enabled: directly,
// with the "Scheduled Event" that a rule without an Input sends.
func tick(ctx context.Context, d *deployment) error {
	var rule *stackrun.Rule
	for i := range d.stack.Rules {
		if d.stack.Rules[i].Target == "schedule" {
			rule = &d.stack.Rules[i]
		}
	}
	if rule == nil {
		return errors.New("the template has no rule that targets schedule")
	}
	ev := events.EventBridgeEvent{Version: "0", ID: "stacke2e-tick", DetailType: "Scheduled Event", Source: "aws.events",
		AccountID: d.stack.Physical.Account, Time: time.Now().UTC().Truncate(time.Second), Region: d.stack.Physical.Region,
		Resources: []string{rule.ARN}, Detail: json.RawMessage(`{}`)}
	payload, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	if _, err := d.pools["schedule"].Invoke(ctx, payload); err != nil {
		return fmt.Errorf("the recrawl tick of %s (%s): %w", rule.LogicalID, rule.Schedule, err)
	}
	return nil
}

// tickAfterTheUpload invokes schedule, and sends the recrawl tick once, after the invocation that
// started the upload's crawl (its seed report is written).
type tickAfterTheUpload struct {
	inv    stackrun.Invoker
	blobs  *s3blob.Store
	tick   func() error
	mu     sync.Mutex
	ticked bool
	err    error // the tick's
}

func (a *tickAfterTheUpload) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	out, err := a.inv.Invoke(ctx, payload)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ticked {
		return out, err
	}
	keys, lerr := a.blobs.List(ctx, "crawls/")
	for _, k := range keys {
		if lerr == nil && strings.HasSuffix(k, "/seeds.json") {
			a.ticked, a.err = true, a.tick()
			break
		}
	}
	return out, err
}

// duplicates invokes fetch with every batch twice in a row, as SQS may deliver a message again:
// the second delivery finds its pages fetched and not yet parsed (parse gathers its batches for
// the template's window), so fetch reads each stored page back and sends its parse message again.
type duplicates struct {
	inv stackrun.Invoker
	mu  sync.Mutex
	n   int
}

func (d *duplicates) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	out, err := d.inv.Invoke(ctx, payload)
	if err != nil {
		return out, err
	}
	d.mu.Lock()
	d.n++
	d.mu.Unlock()
	return d.inv.Invoke(ctx, payload)
}

func (d *duplicates) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n
}

// seedReports returns the crawls whose seed report names seeds/x.txt.
func seedReports(t *testing.T, blobs *s3blob.Store) []string {
	t.Helper()
	ctx := context.Background()
	keys, err := blobs.List(ctx, "crawls/")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, k := range keys {
		if !strings.HasSuffix(k, "/seeds.json") {
			continue // a crawl's settings (spec.json) live beside its report
		}
		b, err := blobs.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		var rep scheduler.SeedReport
		if err := json.Unmarshal(b, &rep); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		if rep.SeedFile != "seeds/x.txt" || rep.Accepted != 1 {
			t.Errorf("%s: seed file %q with %d seeds accepted, want seeds/x.txt with 1", k, rep.SeedFile, rep.Accepted)
		}
		out = append(out, rep.Crawl)
	}
	return out
}

// checkWARC reads every fetched page of the crawl back from its WARC file and holds it against what
// the site serves for that URL.
func checkWARC(t *testing.T, h *e2etest.Harness, crawl string) {
	t.Helper()
	ctx := context.Background()
	n := 0
	err := crawlstate.New(h.Table).EachURL(ctx, crawl, func(u crawlstate.URL) error {
		if u.State != crawlstate.Fetched || u.Page == nil {
			return nil
		}
		at := message.Ref{Key: u.Page.WARCKey, Offset: u.Page.Offset, Length: u.Page.Length}
		if un := u.Page.Unchanged; un != nil {
			// A recrawl found the page unchanged (the tick's crawl and the upload's recrawl one
			// another): its payload is in the record the revisit refers to.
			at = un.Payload
		}
		raw, err := h.Blobs.GetRange(ctx, at.Key, at.Offset, at.Length)
		if err != nil {
			return err
		}
		page, err := warcfile.Decode(raw)
		if err != nil {
			t.Errorf("%s in %s: %v", u.URL, u.Page.WARCKey, err)
			return nil
		}
		if want := served(t, h.Site, u.URL); !bytes.Equal(page.Body, want) || page.URL != u.URL {
			t.Errorf("the WARC record of %s in %s holds %d bytes of %s, want the %d bytes the site serves",
				u.URL, u.Page.WARCKey, len(page.Body), page.URL, len(want))
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != h.Site.Pages {
		t.Errorf("crawl %s: %d pages read back from WARC files, want %d", crawl, n, h.Site.Pages)
	}
}

// served is the body the site answers for u.
func served(t *testing.T, s *e2etest.Site, u string) []byte {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	s.Site.ServeHTTP(rec, httptest.NewRequest("GET", p.RequestURI(), nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return body
}
