package fetcher_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/handler/fetcher"
)

// A redirect hop is a request to its target's host, so it takes that host's politeness slot as a
// fetch does: a host that is free is booked (the next request to it waits its interval), and a
// host whose next slot is far ahead is not requested now; the fetch is tried again later. The
// target is another loopback host (127.0.0.2) than the site's.
func TestARedirectHopTakesAPolitenessSlot(t *testing.T) {
	for _, tt := range []struct {
		name string
		busy bool // the target's host is booked 30 s ahead
	}{{"free host", false}, {"busy host", true}} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, func(c *fetcher.Config) { c.HostRPS = 1 })
			ln, err := net.Listen("tcp", "127.0.0.2:0")
			if err != nil {
				t.Fatal(err)
			}
			var hits atomic.Int32
			other := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/home" {
					http.NotFound(w, r)
					return
				}
				hits.Add(1)
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				io.WriteString(w, page)
			}))
			other.Listener.Close()
			other.Listener = ln
			other.Start()
			t.Cleanup(other.Close)
			target := other.URL + "/home"
			host := mustHost(t, target)
			e.site.mu.Lock()
			e.site.elsewhere = target
			e.site.mu.Unlock()
			ctx := context.Background()
			if tt.busy {
				if _, err := e.state.ReserveSlots(ctx, host, 30*time.Second, 1, 0); err != nil {
					t.Fatal(err)
				}
			}

			e.handle(e.seedRecord("msg-1", e.url("/moved-seed")))
			it := e.item("/moved-seed")
			if tt.busy {
				if hits.Load() != 0 || it.State == crawlstate.Fetched {
					t.Errorf("the target was requested %d times and the seed is %s; want no request while its host is booked", hits.Load(), it.State)
				}
				return
			}
			if hits.Load() != 1 || it.State != crawlstate.Fetched {
				t.Fatalf("the target was requested %d times and the seed is %s/%s (%s); want it fetched through the hop", hits.Load(), it.State, it.Class, it.Detail)
			}
			// The hop booked the target's host: the next request to it gets the slot after.
			next, err := e.state.ReserveSlots(ctx, host, time.Second, 1, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !next.Start.After(time.Now()) {
				t.Errorf("the target's host is free at %v, now %v; want the hop's slot taken", next.Start, time.Now())
			}
		})
	}
}

func mustHost(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}
