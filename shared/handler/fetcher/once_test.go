package fetcher_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/scope"
	"github.com/crawlstack/crawlstack/shared/crawl/web/netguard"
	"github.com/crawlstack/crawlstack/shared/crawl/web/robots"
	"github.com/crawlstack/crawlstack/shared/handler/fetcher"
	"github.com/crawlstack/crawlstack/shared/testkit/embedtest"
)

// One fetch per URL (DESIGN invariant 2), beyond a crash between a GET and its record: a
// transient failure to store or record the batch's pages, a message that names its URL twice, and
// a claim handed over to a re-queued message while an earlier delivery of its owner comes back.

// handlerWith is newEnv's handler, without the handoff, with the deps tune leaves.
func (e *env) handlerWith(tune func(*fetcher.Deps)) *fetcher.Handler {
	cfg := fetcher.DefaultConfig()
	cfg.FetchQueue, cfg.ParseQueue = fetchQ, parseQ
	cfg.HostRPS, cfg.HostConcurrency, cfg.MaxQuickRetry = 0, 0, 0
	d := withState(e.state, fetcher.Deps{HTTP: e.client, Robots: robots.New(e.client, userAgent, time.Hour),
		Scope: scope.DefaultRules(), Guard: netguard.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, nil),
		Pages: e.blobs, Send: e.send, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: e.clock.now})
	if tune != nil {
		tune(&d)
	}
	return fetcher.New(cfg, d)
}

// flakyPages fails its first fails Puts, as S3 does with a 503 SlowDown past the SDK's retries.
type flakyPages struct {
	fetcher.PageStore
	mu    sync.Mutex
	fails int
}

func (f *flakyPages) Put(ctx context.Context, key string, body []byte, contentType string) error {
	f.mu.Lock()
	fail := f.fails > 0
	f.fails--
	f.mu.Unlock()
	if fail {
		return errors.New("put: SlowDown: please reduce your request rate")
	}
	return f.PageStore.Put(ctx, key, body, contentType)
}

// strictOutcomes fails its first fails Records, and refuses a Record that names a key twice, as
// DynamoDB refuses an update whose document paths overlap.
type strictOutcomes struct {
	fetcher.Outcomes
	mu    sync.Mutex
	fails int
	twice []string // keys named twice in one Record
}

func (s *strictOutcomes) Record(ctx context.Context, crawl, group string, outs []crawlstate.Outcome) ([]string, error) {
	s.mu.Lock()
	fail := s.fails > 0
	s.fails--
	seen := map[string]bool{}
	var twice bool
	for _, o := range outs {
		if seen[o.Key] {
			s.twice, twice = append(s.twice, o.Key), true
		}
		seen[o.Key] = true
	}
	s.mu.Unlock()
	switch {
	case twice:
		return nil, errors.New("ValidationException: Two document paths overlap with each other")
	case fail:
		return nil, errors.New("record: InternalServerError")
	}
	return s.Outcomes.Record(ctx, crawl, group, outs)
}

// A transient failure of the WARC file's PUT, or of the write that records the pages, is tried
// again in place: no message fails, and no page is fetched twice.
func TestAFailedStoreOrRecordFetchesNoPageAgain(t *testing.T) {
	tests := []struct {
		name string
		tune func(e *env, d *fetcher.Deps)
	}{
		{"the PUT fails once", func(e *env, d *fetcher.Deps) { d.Pages = &flakyPages{PageStore: e.blobs, fails: 1} }},
		{"the PUT fails three times", func(e *env, d *fetcher.Deps) { d.Pages = &flakyPages{PageStore: e.blobs, fails: 3} }},
		{"the record fails once", func(e *env, d *fetcher.Deps) {
			d.Outcomes = &strictOutcomes{Outcomes: e.state, fails: 1}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			h := e.handlerWith(func(d *fetcher.Deps) { tt.tune(e, d) })
			batch := []string{"/", "/about"}
			recs := e.record("a", batch[0], 1)
			recs2 := e.record("b", batch[1], 1)
			if failed := embedtest.Failures(t, h.Handle, recs, recs2); len(failed) > 0 {
				t.Fatalf("failed %v, want none: the store is tried again in place", failed)
			}
			for _, p := range batch {
				if n := e.site.hitsOf(p); n != 1 {
					t.Errorf("%s requested %d times, want 1", p, n)
				}
				if it := e.item(p); it.State != crawlstate.Fetched || it.Page == nil {
					t.Errorf("%s = %+v, want fetched with its page", p, it)
				}
			}
		})
	}
}

// A message that names one URL twice fetches it once, and records one outcome for it.
func TestAURLNamedTwiceInAMessageIsFetchedOnce(t *testing.T) {
	e := newEnv(t, nil)
	strict := &strictOutcomes{Outcomes: e.state}
	h := e.handlerWith(func(d *fetcher.Deps) { d.Outcomes = strict })
	if failed := embedtest.Failures(t, h.Handle, e.severalURLs("m", "/", "/about", "/")); len(failed) > 0 {
		t.Fatalf("failed %v, want none", failed)
	}
	if len(strict.twice) > 0 {
		t.Errorf("a Record named %v twice", strict.twice)
	}
	if n := e.site.hitsOf("/"); n != 1 {
		t.Errorf("/ requested %d times, want 1", n)
	}
	if it := e.item("/"); it.State != crawlstate.Fetched {
		t.Errorf("/ = %+v, want fetched", it)
	}
}

// gate is a site whose /gated answers 503 with a long Retry-After to its first GET, and holds its
// second until released.
type gate struct {
	srv     *httptest.Server
	mu      sync.Mutex
	hits    int
	second  chan struct{} // closed when the second GET comes in
	release chan struct{}
}

func newGate(t *testing.T) *gate {
	g := &gate{second: make(chan struct{}), release: make(chan struct{})}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/gated" {
			http.NotFound(w, r)
			return
		}
		g.mu.Lock()
		g.hits++
		n := g.hits
		g.mu.Unlock()
		switch n {
		case 1:
			w.Header().Set("Retry-After", "3600")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		case 2:
			close(g.second)
			select {
			case <-g.release:
			case <-time.After(20 * time.Second):
			}
		}
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, page)
	}))
	t.Cleanup(g.srv.Close)
	return g
}

func (g *gate) gets() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.hits
}

// recordOf is a record of id on its receives-th receive carrying the fetch message of raw, admitted.
func (e *env) recordOf(id, raw string, receives int) events.SQSMessage {
	e.t.Helper()
	rec := e.record(id, "/", receives)
	m := message.Fetch{Header: message.Header{Crawl: crawl}, Target: message.Target{URL: raw, Root: raw, Depth: 1}}
	body, err := message.Encode(m)
	if err != nil {
		e.t.Fatal(err)
	}
	rec.Body = body
	e.admit(m.URL, m.Root, m.Depth)
	return rec
}

// A message that claimed its URL and re-queued it for a long Retry-After hands its claim to the
// new message (Target.Prev), with no write. If its invocation then dies (a timeout, an OOM), SQS
// delivers it again, and its redelivery claims the URL again. The new message, coming in while
// the redelivery fetches, must not take that claim over as the one it was handed: the URL is
// fetched once more, not twice.
func TestAHandedOnClaimDoesNotPassOnceItsOwnerClaimsAgain(t *testing.T) {
	e := newEnv(t, nil)
	g := newGate(t)
	h := e.handlerWith(nil)
	a := e.recordOf("A", g.srv.URL+"/gated", 1)
	if failed := embedtest.Failures(t, h.Handle, a); len(failed) > 0 {
		t.Fatalf("failed %v, want the 503 re-queued", failed)
	}
	back := e.received(fetchQ)
	if len(back) != 1 {
		t.Fatalf("%d messages re-queued, want 1", len(back))
	}
	b := e.record("B", "/", 1)
	b.Body = back[0].Body
	// A's invocation died after the re-queue: it comes back, and B's wait is over.
	e.clock.set(time.Now().Add(2 * time.Hour))
	again := a
	again.Attributes = maps.Clone(a.Attributes)
	again.Attributes["ApproximateReceiveCount"] = "2"
	done := make(chan events.SQSEventResponse, 1)
	go func() {
		resp, _ := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{again}})
		done <- resp
	}()
	select {
	case <-g.second: // the redelivery holds the claim, and its GET is in
	case <-time.After(20 * time.Second):
		t.Fatal("A's redelivery made no request")
	}
	if failed := embedtest.Failures(t, h.Handle, b); len(failed) > 0 {
		t.Errorf("B failed %v, want it ended as a duplicate", failed)
	}
	close(g.release)
	select {
	case resp := <-done:
		if len(resp.BatchItemFailures) > 0 {
			t.Errorf("A's redelivery failed %v", resp.BatchItemFailures)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("A's redelivery did not end")
	}
	if n := g.gets(); n != 2 {
		t.Errorf("/gated requested %d times, want 2 (the 503, then once)", n)
	}
	u, err := e.state.Get(context.Background(), crawl, keyOf(t, g.srv.URL+"/gated"))
	if err != nil || u.State != crawlstate.Fetched {
		t.Errorf("/gated = %q (err %v), want fetched", u.State, err)
	}
}
