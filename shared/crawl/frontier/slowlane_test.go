package frontier

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/scope"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// queueSender records the URLs sent to each queue, and fails every send to the queue named in
// fail (a throttled SendMessageBatch), once.
type queueSender struct {
	mu   sync.Mutex
	urls map[string][]string
	fail string
}

func (s *queueSender) SendBatch(_ context.Context, q string, entries []queue.Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q == s.fail {
		s.fail = ""
		return errors.New("throttled")
	}
	if s.urls == nil {
		s.urls = map[string][]string{}
	}
	for _, e := range entries {
		m, err := message.DecodeFetch(e.Body)
		if err != nil {
			return err
		}
		for _, one := range m.Split() {
			s.urls[q] = append(s.urls[q], one.URL)
		}
	}
	return nil
}

// TestRunsGoToTheSlowLane: with a slow lane's queue set, a polite host's runs are sent there and
// nothing else is; without runs (or without the lane) every fetch message goes to the fetch queue;
// a failed send to the slow lane fails only the Links message's URLs it carried, which its
// redelivery sends again, to the same lane.
func TestRunsGoToTheSlowLane(t *testing.T) {
	for _, tc := range []struct {
		name      string
		interval  time.Duration
		runURLs   int
		slow      string
		wantFetch int
		wantSlow  int
	}{
		{name: "runs go to the lane", interval: time.Second, runURLs: DefaultRunURLs, slow: "fetchslow", wantSlow: 25},
		{name: "no runs, no lane traffic", interval: time.Second, runURLs: 0, slow: "fetchslow", wantFetch: 25},
		{name: "a faster host stays on fetch", interval: 500 * time.Millisecond, runURLs: DefaultRunURLs, slow: "fetchslow", wantFetch: 25},
		{name: "no lane: runs go to fetch", interval: time.Second, runURLs: DefaultRunURLs, wantFetch: 25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			snd := &queueSender{}
			f := New(Config{Rules: scope.DefaultRules(), FetchQueue: "fetch", SlowQueue: tc.slow, HostInterval: tc.interval,
				RunURLs: tc.runURLs}, withState(newStore(t), Deps{Send: snd, Log: quiet()}))
			var urls []string
			for i := range 25 {
				urls = append(urls, fmt.Sprintf("http://a.test/%d", i))
			}
			if res, err := f.Admit(ctx, seeds(urls...)); err != nil || res.Sent != 25 {
				t.Fatalf("admit = %+v, %v; want 25 sent", res, err)
			}
			if got := len(snd.urls["fetch"]); got != tc.wantFetch {
				t.Errorf("fetch queue got %d URLs, want %d", got, tc.wantFetch)
			}
			if got := len(snd.urls["fetchslow"]); got != tc.wantSlow {
				t.Errorf("slow lane got %d URLs, want %d", got, tc.wantSlow)
			}
		})
	}

	t.Run("a failed send to the lane is sent again by the redelivery", func(t *testing.T) {
		ctx := context.Background()
		snd := &queueSender{fail: "fetchslow"}
		f := New(Config{Rules: scope.DefaultRules(), FetchQueue: "fetch", SlowQueue: "fetchslow", HostInterval: time.Second,
			RunURLs: DefaultRunURLs}, withState(newStore(t), Deps{Send: snd, Log: quiet()}))
		var urls []string
		for i := range 12 {
			urls = append(urls, fmt.Sprintf("http://a.test/%d", i))
		}
		m := seeds(urls...)
		if _, err := f.Admit(ctx, m); err == nil {
			t.Fatal("admit with the lane's send failing: no error, want one (the message must be delivered again)")
		}
		if n := len(snd.urls["fetchslow"]) + len(snd.urls["fetch"]); n != 0 {
			t.Fatalf("%d URLs sent with the send failing, want 0", n)
		}
		if _, err := f.Admit(ctx, m); err != nil {
			t.Fatalf("redelivery: %v", err)
		}
		if got := len(snd.urls["fetchslow"]); got != 12 || len(snd.urls["fetch"]) != 0 {
			t.Errorf("after the redelivery: slow lane %d URLs, fetch %d; want 12 and 0", got, len(snd.urls["fetch"]))
		}
	})
}
