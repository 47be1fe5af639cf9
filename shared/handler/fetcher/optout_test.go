package fetcher_test

import (
	"context"
	"io"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/optout"
	"github.com/crawlstack/crawlstack/shared/crawl/scope"
	"github.com/crawlstack/crawlstack/shared/crawl/web/netguard"
	"github.com/crawlstack/crawlstack/shared/crawl/web/robots"
	"github.com/crawlstack/crawlstack/shared/handler/fetcher"
)

// withOptOuts gives e a handler that checks the opt-out list in e's table, with entries of the
// given URLs added after their admission.
func withOptOuts(t *testing.T, e *env, urls ...string) {
	t.Helper()
	store := optout.Store{T: e.urls}
	for _, u := range urls {
		ent, err := optout.NewEntry(optout.URL, u, "purged", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := store.Add(context.Background(), ent); err != nil {
			t.Fatal(err)
		}
	}
	cfg := fetcher.DefaultConfig()
	cfg.FetchQueue, cfg.ParseQueue = fetchQ, parseQ
	cfg.HostRPS, cfg.HostConcurrency, cfg.MaxQuickRetry = 0, 0, 0
	e.h = fetcher.New(cfg, withState(e.state, fetcher.Deps{HTTP: e.client, Robots: robots.New(e.client, userAgent, time.Hour),
		Scope: scope.DefaultRules(), Guard: netguard.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, nil), Pages: e.blobs, Handoff: e.hand,
		Send: e.send, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), OptOuts: &optout.Matcher{Store: store}}))
}

// TestAURLOptedOutAfterItsAdmissionIsNotFetched: a URL admitted before its opt-out entry was added
// (a purge's tombstone, say) ends skipped, class opted_out, with no request to its site; and a
// redirect to such a URL is not followed.
func TestAURLOptedOutAfterItsAdmissionIsNotFetched(t *testing.T) {
	for _, c := range []struct{ name, path, listed string }{
		{"the URL itself", "/about", "/about"},
		{"a redirect to it", "/old", "/about"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, nil)
			rec := e.record("msg-1", c.path, 1) // admitted now, before the entry
			withOptOuts(t, e, e.url(c.listed))
			if got := e.handle(rec); len(got) != 0 {
				t.Fatalf("BatchItemFailures = %v, want none", got)
			}
			it := e.item(c.path)
			if it.State != crawlstate.Skipped || it.Class != errclass.OptedOut || !strings.Contains(it.Detail, e.url(c.listed)) {
				t.Errorf("%s = %s/%s (%q), want skipped/opted_out naming the entry", c.path, it.State, it.Class, it.Detail)
			}
			if n := e.site.hitsOf(c.listed); n != 0 {
				t.Errorf("%s was requested %d times, want never", c.listed, n)
			}
			if m := e.received(parseQ); len(m) != 0 {
				t.Errorf("sent %d parse messages, want none", len(m))
			}
		})
	}
}
