package fetcher_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/web/netguard"
	"github.com/crawlstack/crawlstack/shared/crawl/web/robots"
	"github.com/crawlstack/crawlstack/shared/handler/fetcher"
	"github.com/crawlstack/crawlstack/shared/handler/quarantine"
	"github.com/crawlstack/crawlstack/shared/handler/sqsbatch"
)

// TestBadURLsOfAMessageAreQuarantinedOnceWithEveryReason: a message of several URLs, two of which
// do not parse, is quarantined once under its id, with a reason that names both bad URLs; its good
// URL is fetched, and the message is acknowledged.
func TestBadURLsOfAMessageAreQuarantinedOnceWithEveryReason(t *testing.T) {
	e := newEnv(t, nil)
	cfg := fetcher.DefaultConfig()
	cfg.FetchQueue, cfg.ParseQueue, cfg.HostRPS, cfg.MaxQuickRetry = fetchQ, parseQ, 0, 0
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	e.h = fetcher.New(cfg, withState(e.state, fetcher.Deps{HTTP: e.client, Robots: robots.New(e.client, userAgent, time.Hour),
		Guard: netguard.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, nil), Pages: e.blobs, Send: e.send, Log: log,
		Batch: &sqsbatch.Runner{Quarantine: &quarantine.Store{Blobs: e.blobs, Source: "fetch"}, Log: log}}))

	const bad1, bad2 = "http://exa mple.test/a", "http://bad host.test/b"
	e.admit(e.url("/about"), e.url("/"), 1)
	rec := e.record("msg-1", "/about", 1)
	body, err := message.Encode(message.Pack(crawl, []message.Target{
		{URL: bad1, Root: e.url("/"), Depth: 1},
		{URL: e.url("/about"), Root: e.url("/"), Depth: 1},
		{URL: bad2, Root: e.url("/"), Depth: 1},
	}))
	if err != nil {
		t.Fatal(err)
	}
	rec.Body = body

	if failed := e.handle(rec); len(failed) != 0 {
		t.Fatalf("failures %v, want none: the poison is quarantined and the good URL fetched", failed)
	}
	if n := e.site.hitsOf("/about"); n != 1 {
		t.Errorf("the good URL was requested %d times, want 1", n)
	}
	keys, err := e.blobs.List(context.Background(), "quarantine/fetch/")
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 {
		t.Fatalf("quarantined %v, want one entry for the message", keys)
	}
	raw, err := e.blobs.Get(context.Background(), keys[0])
	if err != nil {
		t.Fatal(err)
	}
	var got quarantine.Entry
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if got.MessageID != "msg-1" || got.Class != errclass.Poison || got.Body != body {
		t.Errorf("entry %+v, want msg-1's body as poison", got)
	}
	for _, u := range []string{bad1, bad2} {
		if !strings.Contains(got.Reason, u) {
			t.Errorf("reason %q does not name %s", got.Reason, u)
		}
	}
	if strings.Contains(got.Reason, e.url("/about")) {
		t.Errorf("reason %q names the good URL", got.Reason)
	}
}
