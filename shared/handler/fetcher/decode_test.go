package fetcher_test

import (
	"context"
	"io"
	"log/slog"
	"net/netip"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/web/netguard"
	"github.com/crawlstack/crawlstack/shared/crawl/web/robots"
	"github.com/crawlstack/crawlstack/shared/handler/fetcher"
)

// TestEachMessageOfABatchIsWorkedOnOnce: SQS may deliver one message twice in one batch, under
// one id. A batch holds a message of several URLs twice, one of whose URLs fails (its robots.txt
// check, a backend failure), and a message of one URL twice, whose URL fails the same way. Each
// URL is requested at most once; the failed URL of the message of several goes back alone, once;
// the failures name each failed message once, by its own id.
func TestEachMessageOfABatchIsWorkedOnOnce(t *testing.T) {
	e := newEnv(t, nil)
	cfg := fetcher.DefaultConfig()
	cfg.FetchQueue, cfg.ParseQueue, cfg.HostRPS, cfg.MaxQuickRetry = fetchQ, parseQ, 0, 0
	cache := robots.New(e.client, userAgent, time.Hour)
	var mu sync.Mutex // the handler checks URLs concurrently
	checks := map[string]int{}
	broken := robotsFunc(func(ctx context.Context, u *url.URL) (robots.Decision, error) {
		mu.Lock()
		checks[u.Path]++
		mu.Unlock()
		if strings.HasPrefix(u.Path, "/old") {
			return robots.Decision{}, errclass.Errorf(errclass.Internal, "table unavailable")
		}
		return cache.Check(ctx, u)
	})
	e.h = fetcher.New(cfg, withState(e.state, fetcher.Deps{HTTP: e.client, Robots: broken,
		Guard: netguard.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, nil),
		Pages: e.blobs, Send: e.send, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	several := e.severalURLs("msg-1", "/", "/about", "/old")
	one := e.record("msg-2", "/old-too", 1)
	if got := e.handle(several, one, several, one); !reflect.DeepEqual(got, []string{"msg-2"}) {
		t.Fatalf("BatchItemFailures = %v, want msg-2 once: the message of several sends its failed URL back", got)
	}
	for p, want := range map[string]int{"/": 1, "/about": 1, "/old": 1, "/old-too": 1} {
		if checks[p] != want {
			t.Errorf("robots.txt asked about %s %d times, want %d", p, checks[p], want)
		}
	}
	for _, p := range []string{"/", "/about"} {
		if n := e.site.hitsOf(p); n != 1 {
			t.Errorf("%s requested %d times, want 1", p, n)
		}
		if it := e.item(p); it.State != crawlstate.Fetched {
			t.Errorf("%s = %+v, want fetched", p, it)
		}
	}
	back := e.received(fetchQ)
	if len(back) != 1 {
		t.Fatalf("sent back %d messages, want /old alone, once", len(back))
	}
	m, err := message.DecodeFetch(back[0].Body)
	if err != nil || m.URL != e.url("/old") || len(m.Prev) == 0 || m.Prev[0] != "msg-1" {
		t.Errorf("sent back %s (%v), want /old alone, re-queued by msg-1", back[0].Body, err)
	}
	var pages int
	for _, q := range e.received(parseQ) {
		pm, err := message.DecodeParse(q.Body)
		if err != nil {
			t.Fatal(err)
		}
		_, ps := pm.PageList()
		pages += len(ps)
	}
	if pages != 2 {
		t.Errorf("%d pages sent to parse, want 2 (/ and /about, once each)", pages)
	}
}
