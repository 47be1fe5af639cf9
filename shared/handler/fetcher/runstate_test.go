package fetcher_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/handler/fetcher"
)

// setRun records the crawl and sets its run state.
func (e *env) setRun(to crawlstate.Run) {
	e.t.Helper()
	ctx := context.Background()
	if err := e.state.MarkStarted(ctx, crawl); err != nil {
		e.t.Fatal(err)
	}
	if err := e.state.SetRun(ctx, crawl, to); err != nil {
		e.t.Fatal(err)
	}
}

// TestAPausedCrawlsMessageWaitsWhole: a message of several URLs of a paused crawl goes back to the
// fetch queue as it came, delayed by PauseWait, and is acknowledged: no request, no claim.
func TestAPausedCrawlsMessageWaitsWhole(t *testing.T) {
	e := newEnv(t, func(c *fetcher.Config) { c.PauseWait = 7 * time.Second })
	rec := e.severalURLs("msg-1", "/", "/a")
	e.setRun(crawlstate.Paused)
	if got := e.handle(rec); len(got) != 0 {
		t.Fatalf("BatchItemFailures = %v, want none", got)
	}
	back := e.received(fetchQ)
	if len(back) != 1 || back[0].Body != rec.Body || back[0].ReceiveCount != 1 {
		t.Fatalf("fetch queue holds %+v, want the message as it came, received once", back)
	}
	if d := e.send.delays[rec.Body]; d != 7*time.Second {
		t.Errorf("sent back with delay %v, want PauseWait 7s", d)
	}
	for _, p := range []string{"/", "/a"} {
		if n := e.site.hitsOf(p); n != 0 {
			t.Errorf("%s requested %d times while paused", p, n)
		}
		if u := e.item(p); u.State != crawlstate.Queued || u.Owner != "" {
			t.Errorf("%s is %s, owner %q: want queued and unclaimed", p, u.State, u.Owner)
		}
	}
}

// TestAPausedCrawlsMessageOfTheVersionBeforeWaitsAsThisVersion: a paused crawl's message that
// came in the schema version before this one goes back to wait written as this version, the
// same URLs and group, so that it outlives the next schema change too.
func TestAPausedCrawlsMessageOfTheVersionBeforeWaitsAsThisVersion(t *testing.T) {
	e := newEnv(t, nil)
	rec := e.severalURLs("msg-1", "/", "/a")
	var f map[string]any
	if err := json.Unmarshal([]byte(rec.Body), &f); err != nil {
		t.Fatal(err)
	}
	f["v"] = message.Oldest
	urls := f["urls"].([]any)
	urls[0].(map[string]any)["g"] = "grp" // version 1's name of the group
	b, _ := json.Marshal(f)
	rec.Body = string(b)
	e.setRun(crawlstate.Paused)
	if got := e.handle(rec); len(got) != 0 {
		t.Fatalf("BatchItemFailures = %v, want none", got)
	}
	back := e.received(fetchQ)
	if len(back) != 1 || !message.IsCurrent(back[0].Body) || strings.Contains(back[0].Body, `"g":`) {
		t.Fatalf("fetch queue holds %+v, want the message written as version %d", back, message.Version)
	}
	m, err := message.DecodeFetch(back[0].Body)
	if err != nil || len(m.URLs) != 2 || m.URLs[0].Group != "grp" {
		t.Errorf("sent back as %+v (%v), want both URLs, the first in group grp", m, err)
	}
}

// TestAPausedCrawlsMessageFailsIfItCannotWait: when the send back fails, the message fails, to be
// delivered again.
func TestAPausedCrawlsMessageFailsIfItCannotWait(t *testing.T) {
	e := newEnv(t, nil)
	rec := e.record("msg-1", "/", 1)
	e.setRun(crawlstate.Paused)
	e.send.failFetch = true
	if got := e.handle(rec); !reflect.DeepEqual(got, []string{"msg-1"}) {
		t.Fatalf("BatchItemFailures = %v, want msg-1", got)
	}
	if n := e.site.hitsOf("/"); n != 0 {
		t.Errorf("/ requested %d times while paused", n)
	}
}

// TestAStoppedCrawlsURLsEndStopped: each URL of a stopped crawl's message ends stopped, with no
// request and nothing sent, and the message is acknowledged.
func TestAStoppedCrawlsURLsEndStopped(t *testing.T) {
	e := newEnv(t, nil)
	rec := e.severalURLs("msg-1", "/", "/a")
	e.setRun(crawlstate.StoppedBy)
	if got := e.handle(rec); len(got) != 0 {
		t.Fatalf("BatchItemFailures = %v, want none", got)
	}
	for _, p := range []string{"/", "/a"} {
		if n := e.site.hitsOf(p); n != 0 {
			t.Errorf("%s requested %d times after the stop", p, n)
		}
		if u := e.item(p); u.State != crawlstate.Stopped || u.Class != errclass.Stopped {
			t.Errorf("%s is %s (%s), want stopped (stopped)", p, u.State, u.Class)
		}
	}
	if n := len(e.received(fetchQ)) + len(e.received(parseQ)); n != 0 {
		t.Errorf("%d messages sent for a stopped crawl", n)
	}
}
