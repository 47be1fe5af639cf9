package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/layout"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/finish"
)

// readEvent reads a crawl's end event from the state directory's files, as a user would.
func readEvent(t *testing.T, state, crawl string) (events.EventBridgeEvent, finish.Event) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(state, "blobs", layout.Finished(crawl)))
	if err != nil {
		t.Fatalf("the end event: %v", err)
	}
	var env events.EventBridgeEvent
	var e finish.Event
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatalf("the end event is not EventBridge's envelope: %v\n%s", err, b)
	}
	if err := json.Unmarshal(env.Detail, &e); err != nil {
		t.Fatalf("the end event's detail: %v\n%s", err, b)
	}
	return env, e
}

// statusEnd is the end that `crawl status --json CRAWL` shows.
func statusEnd(t *testing.T, state, crawl string) string {
	t.Helper()
	code, stdout, stderr := runMain(t, "status", "--state", state, "--json", crawl)
	var s Status
	if code != ExitOK || json.Unmarshal([]byte(stdout), &s) != nil {
		t.Fatalf("crawl status: exit %d\n%s%s", code, stdout, stderr)
	}
	return s.End
}

// endOf reads what the crawl item records of the crawl's end.
func endOf(t *testing.T, state, crawl string) crawlstate.Checks {
	t.Helper()
	be, err := OpenEmbedded(state)
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	ch, err := crawlstate.New(be.Table).ChecksOf(context.Background(), crawl)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// TestCrawlRunEndsWithItsEvent: `crawl run` ends when its queues run out, and announces the end
// then, once: the event holds the crawl's counts, a run of the same command puts it no more, and a
// run that could not write it (a fault after the end was decided) leaves it to the next run, which
// writes the event decided.
func TestCrawlRunEndsWithItsEvent(t *testing.T) {
	_, seeds := demoSeeds(t, 30, 4, 500)
	state := t.TempDir()
	body, err := os.ReadFile(seeds)
	if err != nil {
		t.Fatal(err)
	}
	// The fault: a directory where the event's file goes, so that writing it fails after the end
	// is decided and before the event is written.
	be, err := OpenEmbedded(state)
	if err != nil {
		t.Fatal(err)
	}
	crawl := crawlOf(be, "seeds.txt", body)
	be.Close()
	blocker := filepath.Join(state, "blobs", layout.Finished(crawl))
	if err := os.MkdirAll(filepath.Join(blocker, "in-the-way"), 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "--state", state, "--allow-net", "127.0.0.0/8", "--host-rps", "0", "--json", seeds}
	code, _, stderr := runMain(t, args...)
	if code != ExitFailed || !strings.Contains(stderr, "announce the end of crawl "+crawl) {
		t.Fatalf("exit %d, want %d with the failed announcement said:\n%s", code, ExitFailed, stderr)
	}
	if ch := endOf(t, state, crawl); ch.End != crawlstate.EndPending || ch.EndBy != runBy {
		t.Fatalf("after the failed write the crawl's end is %q by %q, want %q by %q", ch.End, ch.EndBy, crawlstate.EndPending, runBy)
	}
	decided := endOf(t, state, crawl).Event
	if got := statusEnd(t, state, crawl); got != "pending" {
		t.Errorf("crawl status shows the end %q, want pending", got)
	}

	if err := os.RemoveAll(blocker); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runMain(t, args...)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	s := lastJSON(t, stdout)
	env, e := readEvent(t, state, crawl)
	if env.DetailType != "Crawl Finished" || env.Source != "crawlstack" || env.ID != finish.EventID(crawl) {
		t.Errorf("envelope %+v: want detail-type Crawl Finished, source crawlstack, id %s", env, finish.EventID(crawl))
	}
	if e.Crawl != crawl || e.End != finish.EndDrained || e.Counts.Fetched != 30 || e.Counts.Fetched != s.Fetched || e.Counts.Seen != s.Seen {
		t.Errorf("event %+v: want crawl %s drained, 30 fetched as the summary counted (%d seen)", e, crawl, s.Seen)
	}
	var was finish.Event
	if err := json.Unmarshal([]byte(decided), &was); err != nil || !was.FinishedAt.Equal(e.FinishedAt) || was.Counts.Fetched != e.Counts.Fetched {
		t.Errorf("the event written (%v) is not the one decided by the run that could not write it (%s)", e.FinishedAt, decided)
	}
	if s.Event == nil || s.Event.EventID != e.EventID {
		t.Errorf("the summary's event is %+v, want the one written", s.Event)
	}
	if ch := endOf(t, state, crawl); ch.End != crawlstate.EndAnnounced {
		t.Errorf("the crawl's end is %q, want %q", ch.End, crawlstate.EndAnnounced)
	}
	if got := statusEnd(t, state, crawl); got != "announced" {
		t.Errorf("crawl status shows the end %q, want announced", got)
	}

	// Announced once: the same command again shows the crawl and writes nothing.
	if err := os.Remove(filepath.Join(state, "blobs", layout.Finished(crawl))); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runMain(t, args...); code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(state, "blobs", layout.Finished(crawl))); !os.IsNotExist(err) {
		t.Errorf("a run of an announced crawl wrote its event again (%v)", err)
	}
}
