package fetcher_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
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
