package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
)

// TestStatusShowsAStalledCrawl: a crawl whose drain checks announced it stalled shows as stalled in
// crawl status, with what to do, in text and JSON and in the list of crawls.
func TestStatusShowsAStalledCrawl(t *testing.T) {
	state := t.TempDir()
	be, err := OpenEmbedded(state)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st := crawlstate.New(be.Table)
	const crawl = "stalled-1"
	if err := st.MarkStarted(ctx, crawl); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Admit(ctx, crawl, "k1", "http://a.test/", "", 0, "links-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.StepCheck(ctx, crawl, crawlstate.Step{Seq: 0, By: "check-0", Stall: `{"end":"stalled"}`}); err != nil {
		t.Fatal(err)
	}
	if err := st.MarkStallAnnounced(ctx, crawl); err != nil {
		t.Fatal(err)
	}
	if err := be.Close(); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runMain(t, "status", "--state", state, crawl)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"crawl stalled-1: stalled", `"Crawl Stalled" event was sent`, "crawl redrive --state " + state + " QUEUE",
		"crawl resume --state " + state + " stalled-1"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("crawl status does not say %q:\n%s", want, stdout)
		}
	}
	code, stdout, stderr = runMain(t, "status", "--state", state, "--json", crawl)
	var s Status
	if err := json.Unmarshal([]byte(stdout), &s); code != ExitOK || err != nil {
		t.Fatalf("exit %d, %v\n%s%s", code, err, stdout, stderr)
	}
	if s.State != "stalled" || s.Stall != string(crawlstate.StallAnnounced) || s.StalledAt.IsZero() {
		t.Errorf("status --json: state %q, stall %q at %v; want stalled, announced, a time", s.State, s.Stall, s.StalledAt)
	}
	if code, stdout, _ = runMain(t, "status", "--state", state); code != ExitOK || !strings.Contains(stdout, "stalled") {
		t.Errorf("the list of crawls (exit %d) does not show it stalled:\n%s", code, stdout)
	}
}
