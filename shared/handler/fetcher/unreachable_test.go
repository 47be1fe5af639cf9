package fetcher_test

import (
	"bytes"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/web/httpfetch"
	"github.com/crawlstack/crawlstack/shared/crawl/web/netguard"
	"github.com/crawlstack/crawlstack/shared/crawl/web/robots"
	"github.com/crawlstack/crawlstack/shared/handler/fetcher"
)

// A seed host that is down is said at once, at warn, with its cause and next try, and said once:
// its other URLs wait as silently as before. Without it a crawl of one such seed looks like a hang.
func TestAHostThatDoesNotAnswerIsSaidOnce(t *testing.T) {
	e := newEnv(t, nil)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + l.Addr().String()
	l.Close() // nothing listens there now: connection refused
	var logs bytes.Buffer
	guard := netguard.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, nil)
	client, err := httpfetch.New(httpfetch.Options{UserAgent: userAgent, Guard: guard, TotalTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	cfg := fetcher.DefaultConfig()
	cfg.FetchQueue, cfg.ParseQueue, cfg.HostRPS = fetchQ, parseQ, 0
	e.h = fetcher.New(cfg, withState(e.state, fetcher.Deps{HTTP: client, Robots: robots.New(client, userAgent, time.Hour),
		Guard: guard, Pages: e.blobs, Send: e.send, Now: e.clock.now,
		Log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))}))

	if got := e.handle(e.seedRecord("msg-1", down+"/"), e.seedRecord("msg-2", down+"/b")); len(got) != 0 {
		t.Fatalf("BatchItemFailures = %v, want none: the URLs wait in the queue", got)
	}
	if it, err := e.state.Get(t.Context(), crawl, keyOf(t, down+"/")); err != nil || it.State != crawlstate.Queued {
		t.Fatalf("the down host's seed = %+v, %v; want it still queued, waiting for its retry", it, err)
	}
	out := logs.String()
	if n := strings.Count(out, "a host does not answer"); n != 1 {
		t.Fatalf("the host was said %d times, want once:\n%s", n, out)
	}
	for _, want := range []string{"level=WARN", "host=" + strings.TrimPrefix(down, "http://"), "class=robots_unavailable",
		"unreachable (connect)", "nextTry=", "--allow-net"} {
		if !strings.Contains(out, want) {
			t.Errorf("the line does not say %q:\n%s", want, out)
		}
	}
	// A later batch of the same process says nothing more of the host.
	logs.Reset()
	e.handle(e.seedRecord("msg-3", down+"/c"))
	if strings.Contains(logs.String(), "a host does not answer") {
		t.Errorf("the host was said again in a later batch:\n%s", logs.String())
	}
}
