package frontier

import (
	"context"
	"errors"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/scope"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// TestAStoppedCrawlAdmitsNothing: once its crawl is stopped, a link is counted (class stopped),
// not admitted: no item, no fetch message. A paused crawl admits as usual.
func TestAStoppedCrawlAdmitsNothing(t *testing.T) {
	ctx := context.Background()
	st := newStore(t, crawlstate.WithRunCheck(-1))
	snd := &fakeSender{}
	f := New(Config{Rules: scope.DefaultRules(), FetchQueue: "fetch"}, withState(st, Deps{Send: snd, Log: quiet()}))
	if err := f.Start(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	links := func(u string) *message.Links {
		return &message.Links{Header: message.Header{Crawl: "c1"}, Root: "http://a.test/", Depth: 1, URLs: []string{u}}
	}
	if err := st.SetRun(ctx, "c1", crawlstate.Paused); err != nil {
		t.Fatal(err)
	}
	if res, err := f.Admit(ctx, links("http://a.test/while-paused")); err != nil || res.Sent != 1 {
		t.Errorf("a paused crawl: %+v, %v; want the link admitted and sent", res, err)
	}
	if err := st.SetRun(ctx, "c1", crawlstate.StoppedBy); err != nil {
		t.Fatal(err)
	}
	res, err := f.Admit(ctx, links("http://a.test/after-stop"))
	if err != nil || res.Sent != 0 || res.Rejected != 1 {
		t.Errorf("a stopped crawl: %+v, %v; want the link rejected", res, err)
	}
	if _, err := st.Get(ctx, "c1", urlKey(t, "http://a.test/after-stop")); !errors.Is(err, table.ErrNotFound) {
		t.Errorf("the refused link has an item (%v), want none", err)
	}
	if got := snd.urls(t); len(got) != 1 {
		t.Errorf("sent %v, want the paused crawl's link alone", got)
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := st.Counters(ctx, "c1")
	if err != nil || c.StopRefused != 1 || c.Classes[errclass.Stopped] != 0 {
		t.Errorf("counters %+v, %v: want one link refused for the stop (not a URL of class stopped)", c, err)
	}
}
