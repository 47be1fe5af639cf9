package fetcher_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/crawl/scope"
	"github.com/crawlstack/crawlstack/shared/crawl/web/netguard"
	"github.com/crawlstack/crawlstack/shared/crawl/web/robots"
	"github.com/crawlstack/crawlstack/shared/handler/fetcher"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// An invocation that its run keeps alive takes more of its queue's messages meanwhile (topup.go).

// topUpRun is how many URLs the run of the top-up tests has: 3 s of the site's slots, past the
// 2 s that an invocation's runs must keep it for it to receive in these tests (Config.TopUpStay).
const topUpRun = 15

// topUpHandler is e's handler at the run tests' rate, or as tune sets it, taking more messages
// from recv (nil: none).
func (e *env) topUpHandler(recv fetcher.Receiver, tune ...func(*fetcher.Config)) *fetcher.Handler {
	cfg := fetcher.DefaultConfig()
	cfg.FetchQueue, cfg.ParseQueue, cfg.MaxQuickRetry = fetchQ, parseQ, 0
	politeRuns(&cfg)
	cfg.TopUpStay = 2 * time.Second
	for _, f := range tune {
		f(&cfg)
	}
	d := withState(e.state, fetcher.Deps{HTTP: e.client, Robots: robots.New(e.client, userAgent, time.Hour),
		Scope: scope.DefaultRules(), Guard: netguard.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, nil),
		Pages: e.blobs, Send: e.send, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: e.clock.now})
	if recv != nil {
		d.TopUp = recv
	}
	return fetcher.New(cfg, d)
}

// queued puts rec's body in the fetch queue, as the frontier sends it.
func (e *env) queued(rec events.SQSMessage) {
	e.t.Helper()
	if err := e.q.SendBatch(context.Background(), fetchQ, []queue.Entry{{ID: "0", Body: rec.Body}}); err != nil {
		e.t.Fatal(err)
	}
}

// handleWithin hands h the batch of recs in an invocation of the given timeout (0: none, as in
// crawl run).
func (e *env) handleWithin(h *fetcher.Handler, timeout time.Duration, recs ...events.SQSMessage) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	if timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()
	resp, err := h.Handle(ctx, events.SQSEvent{Records: recs})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		e.t.Fatalf("Handle = %+v, %v; want no failures", resp, err)
	}
}

// lostDeletes is a queue whose deletes fail: after deleting (the answer lost), or before.
type lostDeletes struct {
	fetcher.Receiver
	applied bool
	mu      sync.Mutex
	handles []string
}

func (l *lostDeletes) DeleteBatch(ctx context.Context, q string, handles []string) error {
	l.mu.Lock()
	l.handles = append(l.handles, handles...)
	l.mu.Unlock()
	if l.applied {
		if err := l.Receiver.DeleteBatch(ctx, q, handles); err != nil {
			return err
		}
	}
	return errors.New("DeleteMessageBatch: RequestTimeout: the answer never came")
}

// TestAnInvocationItsRunKeepsTakesMoreFromItsQueue: while a run of 15 URLs keeps the invocation
// for 3 s, a lone URL of another host waiting in the queue is received by the invocation, fetched
// and its message deleted, before the invocation ends. Without a receiver, or with less than a
// minute left before the deadline, or with no deadline (crawl run), the message stays in the queue, unfetched. A delete whose
// answer is lost, applied or not, loses nothing and fetches nothing twice: the message that comes
// back finds its URL done.
func TestAnInvocationItsRunKeepsTakesMoreFromItsQueue(t *testing.T) {
	for _, tc := range []struct {
		name     string
		topUp    bool
		timeout  time.Duration
		lost     *bool // the deletes fail: applied or not
		wantTook bool
	}{
		{name: "taken", topUp: true, timeout: 2 * time.Minute, wantTook: true},
		{name: "no receiver", topUp: false, timeout: 2 * time.Minute},
		{name: "near the deadline", topUp: true, timeout: 50 * time.Second},
		{name: "no deadline", topUp: true},
		{name: "delete lost after it applied", topUp: true, timeout: 2 * time.Minute, lost: ptr(true), wantTook: true},
		{name: "delete failed", topUp: true, timeout: 2 * time.Minute, lost: ptr(false), wantTook: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, politeRuns)
			other := newSite(t)
			t.Cleanup(other.srv.Close)
			e.queued(e.recordOf("lone", other.srv.URL+"/about", 1))
			var recv fetcher.Receiver
			var lost *lostDeletes
			if tc.topUp {
				recv = e.q
				if tc.lost != nil {
					lost = &lostDeletes{Receiver: e.q, applied: *tc.lost}
					recv = lost
				}
			}
			paths := runPaths(topUpRun)
			e.handleWithin(e.topUpHandler(recv), tc.timeout, e.run("run", paths, make([]time.Time, len(paths))))
			e.wantFetched(paths)
			took := other.hitsOf("/about")
			if tc.wantTook != (took == 1) || took > 1 {
				t.Fatalf("the queued URL was requested %d times in the invocation, want it taken: %v", took, tc.wantTook)
			}
			visible, hidden, err := e.q.Depth(context.Background(), fetchQ)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case !tc.wantTook:
				if visible != 1 {
					t.Fatalf("queue: %d visible, %d hidden; want the message still there", visible, hidden)
				}
			case lost == nil || lost.applied:
				if visible+hidden != 0 {
					t.Fatalf("queue: %d visible, %d hidden; want the message taken deleted", visible, hidden)
				}
			default:
				// Its delete failed: the message comes back when its visibility ends; a redelivery
				// of it finds its URL done, and is acknowledged without a request.
				if hidden != 1 || len(lost.handles) != 1 {
					t.Fatalf("queue: %d hidden, %d deletes tried; want the message hidden, its delete tried once", hidden, len(lost.handles))
				}
				if err := e.q.ChangeVisibility(context.Background(), fetchQ, lost.handles[0], 0); err != nil {
					t.Fatal(err)
				}
				back := e.received(fetchQ)
				if len(back) != 1 {
					t.Fatalf("%d messages came back, want the one whose delete failed", len(back))
				}
				e.handleWithin(e.topUpHandler(nil), time.Minute, events.SQSMessage{MessageId: back[0].ID,
					ReceiptHandle: back[0].ReceiptHandle, Body: back[0].Body,
					Attributes: map[string]string{"ApproximateReceiveCount": "2"}})
				if n := other.hitsOf("/about"); n != 1 {
					t.Fatalf("the URL whose message came back was requested %d times, want once", n)
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestARunOfAHostItsInvocationBookedWaitsBehindIt: the invocation works on a run of a host, 8 s
// or more of its slots, and takes the host's next run from the queue meanwhile (the
// single-host crawl's invocations did so for nearly every run). The run taken waits in place for
// the host, its slots booked in one write from the first run's last on, and is fetched in the
// same invocation: nothing goes back to the queue, each URL is requested once, and the host's
// requests keep its interval. Before, the run went back to the queue to wait for the host (it
// was booked further ahead than a run waits), and came back after the invocation's end, in one
// of its own. With one place a host in the process and an interval shorter than the early start
// of a run's URL (runWaitEarly), the run behind took the host's place before the first run's last
// URLs, which lost their slots and booked again behind it (11 writes on the slot item).
func TestARunOfAHostItsInvocationBookedWaitsBehindIt(t *testing.T) {
	for _, tc := range []struct {
		name     string
		interval time.Duration
		places   int
		first    int // the first run's URLs: 8 s or more of the host's slots
	}{
		{"two places", 600 * time.Millisecond, 2, topUpRun},
		{"one place", runInterval, 1, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			polite := func(c *fetcher.Config) {
				c.HostRPS, c.HostConcurrency = float64(time.Second)/float64(tc.interval), tc.places
			}
			e := newEnv(t, polite)
			first := runPaths(tc.first)
			var next []string
			for i := range 5 {
				next = append(next, fmt.Sprintf("/run/next/%d", i))
			}
			e.queued(e.run("next", next, make([]time.Time, len(next))))
			before := e.slots.Writes()
			e.handleWithin(e.topUpHandler(e.q, polite), 2*time.Minute, e.run("first", first, make([]time.Time, len(first))))
			all := append(slices.Clone(first), next...)
			e.wantFetched(all)
			checkInterval(t, e.requestTimes(all), tc.interval)
			if n := e.slots.Writes() - before; n != 2 {
				t.Errorf("%d writes on the host's slot item, want 2: one for each run", n)
			}
			if n := e.send.sentTo(fetchQ); n != 0 {
				t.Errorf("%d fetch messages sent back, want none", n)
			}
			visible, hidden, err := e.q.Depth(context.Background(), fetchQ)
			if err != nil {
				t.Fatal(err)
			}
			if visible+hidden != 0 {
				t.Fatalf("fetch queue: %d visible, %d hidden; want the run taken fetched and deleted", visible, hidden)
			}
		})
	}
}
