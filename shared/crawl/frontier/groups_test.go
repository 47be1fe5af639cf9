package frontier

import (
	"context"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/scope"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
)

// TestAFetchMessageNamesItsURLsGroup: the Links messages of one schedule batch share their
// groups, so a fetch message carries URLs that different messages admitted; every fetch message
// names one group, the one written on its URLs' items, and a redelivered Links message sends its
// unsent URLs again in the groups their items name, not new ones.
func TestAFetchMessageNamesItsURLsGroup(t *testing.T) {
	ctx := WithGroups(context.Background())
	st := newStore(t)
	snd := &fakeSender{}
	f := New(Config{Rules: scope.DefaultRules(), FetchQueue: "fetch"}, withState(st, Deps{Send: snd, Log: quiet()}))
	first := seeds("http://a.test/1", "http://b.test/1")
	second := seeds("http://c.test/1", "http://a.test/2")
	var staged []*Staged
	for _, m := range []*message.Links{first, second} {
		s, err := f.Stage(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		staged = append(staged, s)
	}
	for _, err := range f.Send(ctx, staged) {
		if err != nil {
			t.Fatal(err)
		}
	}
	groupOf := map[string]string{} // URL -> the group its fetch message named
	for _, b := range snd.bodies {
		fm, err := message.DecodeFetch(b)
		if err != nil {
			t.Fatal(err)
		}
		parts := fm.Split()
		for _, p := range parts {
			if p.Group == "" || p.Group != parts[0].Group {
				t.Errorf("fetch message %v names groups %q and %q, want one", fm.URLList(), parts[0].Group, p.Group)
			}
			groupOf[p.URL] = p.Group
		}
	}
	if len(snd.bodies) != 2 || groupOf["http://a.test/1"] != groupOf["http://c.test/1"] {
		t.Errorf("sent %d messages, groups %v: want a.test/1, b.test/1 and c.test/1 in one, a.test/2 in another",
			len(snd.bodies), groupOf)
	}
	for u, g := range groupOf {
		it, err := st.Get(ctx, "c1", urlnorm.Key(u))
		if err != nil || it.Group != g {
			t.Errorf("%s: item in group %q (%v), its message named %q", u, it.Group, err, g)
		}
	}
	// The first Links message comes again, to another schedule process: its URLs are unsent as
	// far as the table knows (no fetcher claimed them), so they go out again, in their groups.
	snd.bodies = nil
	other := New(Config{Rules: scope.DefaultRules(), FetchQueue: "fetch"}, withState(st, Deps{Send: snd, Log: quiet()}))
	if res, err := other.Admit(context.Background(), first); err != nil || res.Sent != 2 {
		t.Fatalf("redelivery = %+v, %v; want both URLs sent again", res, err)
	}
	resent := 0
	for _, b := range snd.bodies {
		fm, err := message.DecodeFetch(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range fm.Split() {
			resent++
			if p.Group != groupOf[p.URL] {
				t.Errorf("%s sent again in group %q, want its own %q", p.URL, p.Group, groupOf[p.URL])
			}
		}
	}
	if resent != 2 {
		t.Errorf("sent %d URLs again, want 2", resent)
	}
}
