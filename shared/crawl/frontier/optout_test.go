package frontier

import (
	"context"
	"errors"
	"net/url"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/optout"
	"github.com/crawlstack/crawlstack/shared/crawl/scope"
)

// optOuts is a list of hosts, or a list that cannot be read.
type optOuts struct {
	hosts map[string]bool
	err   error
}

func (o optOuts) OptedOut(_ context.Context, u *url.URL) (optout.Entry, bool, error) {
	return optout.Entry{Kind: optout.Host, Value: u.Hostname()}, o.hosts[u.Hostname()], o.err
}

// A URL on the opt-out list is recorded skipped with class opted_out and never sent; the others
// go on. A list that cannot be read fails the admission (the message is delivered again) rather
// than admit a URL unchecked.
func TestOptedOutURLsAreSkipped(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	snd := &fakeSender{}
	list := &optOuts{hosts: map[string]bool{"out.test": true}}
	f := New(Config{Rules: scope.DefaultRules(), FetchQueue: "fetch"}, withState(st, Deps{Send: snd, Log: quiet(), OptOuts: list}))
	res, err := f.Admit(ctx, seeds("http://in.test/", "http://out.test/", "http://out.test/page"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent != 1 || res.Rejected != 2 {
		t.Errorf("admit = %+v, want 1 sent and 2 rejected", res)
	}
	if got := snd.urls(t); len(got) != 1 || got[0] != "http://in.test/" {
		t.Errorf("sent %v, want only http://in.test/", got)
	}
	c, err := st.Counters(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if c.Skipped != 2 || c.Classes[errclass.OptedOut] != 2 {
		t.Errorf("counters = %+v, want 2 skipped, opted_out", c)
	}

	list.err = errors.New("table unavailable") // the list's reads fail from now on
	if _, err := f.Admit(ctx, seeds("http://new.test/")); err == nil {
		t.Errorf("an admission with an unreadable opt-out list succeeded")
	}
	if got := snd.urls(t); len(got) != 1 {
		t.Errorf("sent %v after the failed admission, want nothing more", got)
	}
}
