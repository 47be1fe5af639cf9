package frontier

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/scope"
	"github.com/crawlstack/crawlstack/shared/local/sqlite"
	"github.com/crawlstack/crawlstack/shared/port/table/tabletest"
)

// TestAHalfDoneUnadmissionIsFinishedByTheRedelivery: the URL's budget reservation fails, and so
// does the delete that takes its admission back, after the tombstone in its group. The Links
// message's redelivery finishes the un-admission, admits the URL afresh and sends it, where it
// found the URL another message's for good; and the fetch message sent claims it.
func TestAHalfDoneUnadmissionIsFinishedByTheRedelivery(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	tb := tabletest.NewFaults(db.Table("crawl"),
		tabletest.Rule{Op: "update", Sort: crawlstate.BudgetKind, Nth: 1, Fail: true}, // the host's budget
		tabletest.Rule{Op: "delete", Sort: "u#", Nth: 1, Fail: true})                  // Unadmit's delete of the URL's item
	st := crawlstate.New(tb)
	snd := &fakeSender{}
	f := New(Config{Rules: scope.DefaultRules(), FetchQueue: "fetch", MaxPagesPerHost: 10}, withState(st, Deps{Send: snd, Log: quiet()}))
	m := seeds("http://a.test/")
	if _, err := f.Admit(ctx, m); err == nil {
		t.Fatal("a failed budget reservation must fail the message")
	}
	if got := tb.Injected(); len(got) != 2 {
		t.Fatalf("faults injected %v, want the budget's update and the delete failed", got)
	}
	res, err := f.Admit(ctx, m) // the redelivery
	if err != nil {
		t.Fatal(err)
	}
	got := snd.urls(t)
	if res.Sent != 1 || len(got) != 1 || got[0] != "http://a.test/" {
		t.Fatalf("redelivery: %+v, sent %v; want the URL admitted afresh and sent", res, got)
	}
	key := urlKey(t, "http://a.test/")
	u, err := st.Get(ctx, "c1", key)
	if err != nil {
		t.Fatal(err)
	}
	claimed, err := st.ClaimGroup(ctx, "c1", crawlstate.GroupOf(u), "fetch-1", nil, time.Minute, []string{key})
	if _, ok := claimed[key]; err != nil || !ok {
		t.Errorf("the URL sent is not claimed in its group %q: %v, %v", crawlstate.GroupOf(u), claimed, err)
	}
}
