package faultproxy_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/aws/dynamotable"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/session"
	"github.com/crawlstack/crawlstack/shared/testkit/awstest"
	"github.com/crawlstack/crawlstack/shared/testkit/faultproxy"
)

// TestIntegrationAReplayedCookieJarWriteChangesNothing: a cookie jar's save reads the jar (call
// 1), then writes it (call 2), which DynamoDB applies and whose answer is lost: the SDK replays
// it, its condition fails on the save's own write, and the save recognises it. The jar, read
// directly, holds the cookie once, at version 1.
func TestIntegrationAReplayedCookieJarWriteChangesNothing(t *testing.T) {
	r := newRig(t, faultproxy.Schedule{Seed: 1, Script: map[uint64]faultproxy.Kind{2: faultproxy.ApplyDrop}}, 0, 0)
	_, _, name := awstest.DynamoTable(t, "fp")
	ctx := ctxT(t)
	via := crawlstate.NewSessions(dynamotable.New(r.via.ddb, name), nil)
	set := session.Learn(&url.URL{Scheme: "https", Host: "h.test", Path: "/"},
		[]*http.Cookie{{Name: "sid", Value: "s-1", Path: "/"}}, time.Now())
	if _, err := via.SaveJar(ctx, "crawl-1", "h.test", set, "token-1"); err != nil {
		t.Fatalf("a save whose write's answer was lost: %v", err)
	}
	fs := r.p.Faults()
	if len(fs) != 1 || fs[0].Kind != faultproxy.ApplyDrop || fs[0].Op != "PutItem" {
		t.Fatalf("fault log = %v, want one apply-drop of the jar's PutItem", fs)
	}
	direct := dynamotable.New(r.direct.ddb, name)
	it, err := direct.Get(ctx, crawlstate.JarKey("crawl-1", "h.test"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := session.Decode(it.String("jar"))
	if err != nil || len(got) != 1 || got[0].Value != "s-1" || it.Int("ver") != 1 {
		t.Errorf("the jar holds %v (%v) at version %d, want the one cookie at version 1", got, err, it.Int("ver"))
	}
}
