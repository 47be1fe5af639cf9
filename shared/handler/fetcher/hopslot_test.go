package fetcher_test

import (
	"context"
	"fmt"
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
// host whose next slot is far ahead is not requested now; the fetch is tried again later, and the
// site that redirected is not taken for failing. The target is another loopback host (127.0.0.2)
// than the site's.
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

			if tt.busy {
				// As many seeds as open a host's circuit when their first requests fail (two already
				// widen its gap): a busy redirect target is no failure of the site that redirects.
				for i := range crawlstate.DefaultCircuitFailures {
					seed := fmt.Sprintf("%s?n=%d", e.url("/moved-seed"), i)
					e.handle(e.seedRecord(fmt.Sprint("msg-", i), seed))
					if u, err := e.state.Get(ctx, crawl, keyOf(t, seed)); err != nil || u.State == crawlstate.Fetched {
						t.Errorf("seed %d is %s, %v; want it not fetched while the target's host is booked", i, u.State, err)
					}
				}
				if hits.Load() != 0 {
					t.Errorf("the target was requested %d times; want none while its host is booked", hits.Load())
				}
				site := mustHost(t, e.url("/"))
				if gap, open := e.state.Throttled(site), e.state.CircuitOpen(site); gap != 0 || open != 0 {
					t.Errorf("the site is throttled to %s, its circuit open for %s; want neither: it answered every request", gap, open)
				}
				return
			}
			e.handle(e.seedRecord("msg-1", e.url("/moved-seed")))
			it := e.item("/moved-seed")
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
