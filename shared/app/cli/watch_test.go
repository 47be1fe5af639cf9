package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/demo/demosite"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// screens is a writer that counts status screens (their header lines) and calls after on the nth.
type screens struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	header string
	n      int
	at     int
	after  func()
}

func (s *screens) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n += strings.Count(string(p), s.header)
	if s.n == s.at && s.after != nil {
		s.after()
		s.after = nil
	}
	return s.buf.Write(p)
}

// TestStatusWatch: --watch on a crawl with nothing left to do shows one screen and ends; on a
// crawl with a message still queued it refreshes until interrupted; bad intervals are refused.
func TestStatusWatch(t *testing.T) {
	srv := httptest.NewServer(demosite.New(4, 2, 200))
	defer srv.Close()
	state := t.TempDir()
	seeds := writeFile(t, "seeds.txt", srv.URL+"/\n")
	code, stdout, stderr := runMain(t, "run", "--state", state, "--allow-net", "127.0.0.0/8", "--host-rps", "0", "--json", "--quiet", seeds)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	crawl := lastJSON(t, stdout).Crawl

	code, stdout, stderr = runMain(t, "status", "--state", state, "--watch", "1s", crawl)
	if code != ExitOK || strings.Count(stdout, "crawl "+crawl+":") != 1 || !strings.Contains(stdout, "finished") {
		t.Errorf("a drained crawl: exit %d, want one finished screen:\n%s%s", code, stdout, stderr)
	}
	code, stdout, _ = runMain(t, "status", "--state", state, "--watch", "1s", "--json", crawl)
	var s Status
	if err := json.Unmarshal([]byte(strings.TrimSpace(stdout)), &s); code != ExitOK || err != nil || s.Crawl != crawl || s.State != "finished" {
		t.Errorf("--json: exit %d, %v, want one JSON line of the finished crawl:\n%s", code, err, stdout)
	}

	// A message left in the fetch queue: the crawl is not done, and the watch goes on.
	be, err := OpenEmbedded(state)
	if err != nil {
		t.Fatal(err)
	}
	res, err := be.Setup(context.Background(), QueueSettings{Visibility: 30 * time.Second, MaxReceiveCount: 5})
	if err == nil {
		err = be.Queue.SendBatch(context.Background(), res.Fetch, []queue.Entry{{ID: "0", Body: "{}", Delay: 10 * time.Minute}})
	}
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &screens{header: "crawl " + crawl + ":", at: 2, after: cancel}
	start := time.Now()
	if err := watchStatus(ctx, crawlstate.New(be.Table), be, crawl, time.Second, false, out, hints{}); err != nil {
		t.Fatalf("watch: %v", err)
	}
	be.Close()
	if out.n != 2 || !strings.Contains(out.buf.String(), "fetch 0+1") {
		t.Errorf("%d screens, want 2 showing the delayed fetch message:\n%s", out.n, out.buf.String())
	}
	if time.Since(start) < time.Second {
		t.Errorf("the second screen came %v after the first, before the interval", time.Since(start))
	}

	for _, args := range [][]string{{"--watch", "10ms", crawl}, {"--watch", "5s"}} {
		if code, _, stderr := runMain(t, append([]string{"status", "--state", state}, args...)...); code != ExitUsage || !strings.Contains(stderr, "--watch") {
			t.Errorf("status %v: exit %d, want a usage error about --watch: %s", args, code, stderr)
		}
	}
}
