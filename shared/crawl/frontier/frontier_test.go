package frontier

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/scope"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/local/sqlite"
	"github.com/crawlstack/crawlstack/shared/port/queue"
	"github.com/crawlstack/crawlstack/shared/port/table"
	"github.com/crawlstack/crawlstack/shared/testkit/embedtest"
)

// fakeSender records sent bodies; failIDs lists entry IDs to fail once per call.
type fakeSender struct {
	mu      sync.Mutex
	bodies  []string
	failIDs map[string]bool
}

func (s *fakeSender) SendBatch(_ context.Context, _ string, entries []queue.Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	be := &queue.BatchError{Failed: map[string]error{}}
	for _, e := range entries {
		if s.failIDs[e.ID] {
			be.Failed[e.ID] = errors.New("throttled")
			continue
		}
		s.bodies = append(s.bodies, e.Body)
	}
	if len(be.Failed) > 0 {
		return be
	}
	return nil
}

func (s *fakeSender) urls(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, b := range s.bodies {
		m, err := message.DecodeFetch(b)
		if err != nil {
			t.Fatalf("sent an invalid fetch message: %v", err)
		}
		out = append(out, m.URLList()...)
	}
	return out
}

func newStore(t *testing.T, opts ...crawlstate.Option) *crawlstate.Store {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return crawlstate.New(db.Table("crawl"), opts...)
}

// withState gives d the crawl state s for each of the capabilities a Frontier takes of it.
func withState(s *crawlstate.Store, d Deps) Deps {
	d.Admissions, d.Skips, d.Gates, d.PageBudget, d.Counters, d.Slots, d.Starts = s, s, s, s, s, s, s
	return d
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func seeds(urls ...string) *message.Links {
	return &message.Links{Header: message.Header{Crawl: "c1"}, URLs: urls}
}

func TestAdmitDedupAndRedelivery(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	snd := &fakeSender{}
	cfg := Config{Rules: scope.DefaultRules(), FetchQueue: "fetch"}
	f := New(cfg, withState(st, Deps{Send: snd, Log: quiet()}))
	m := seeds("http://a.test/", "HTTP://A.TEST:80/#frag", "http://b.test/x", "not a url")
	res, err := f.Admit(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent != 2 || res.Known != 1 || res.Invalid != 1 {
		t.Errorf("first admit = %+v, want 2 sent, 1 known (same URL spelled twice), 1 invalid", res)
	}
	// The same message again (a duplicate delivery): the frontier that sent it remembers.
	if res, err := f.Admit(ctx, m); err != nil || res.Sent != 0 {
		t.Errorf("redelivery to the same frontier = %+v, %v; want nothing sent", res, err)
	}
	// Through a cold frontier (a new container after a crash), the message sends again each URL
	// it admitted that no worker holds yet: it cannot know whether the send happened.
	if res, err := New(cfg, withState(st, Deps{Send: snd, Log: quiet()})).Admit(ctx, m); err != nil || res.Sent != 2 {
		t.Errorf("redelivery to a cold frontier = %+v, %v; want the 2 unclaimed URLs sent again", res, err)
	}
	// Once a worker holds a URL (or it is done), no delivery sends it again.
	for _, u := range []string{"http://a.test/", "http://b.test/x"} {
		if _, err := st.Claim(ctx, "c1", urlKey(t, u), "fetch-1", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if res, err := New(cfg, withState(st, Deps{Send: snd, Log: quiet()})).Admit(ctx, m); err != nil || res.Sent != 0 {
		t.Errorf("redelivery after the claims = %+v, %v; want nothing sent", res, err)
	}
	if got := snd.urls(t); len(got) != 4 {
		t.Errorf("sent %v, want each URL twice (once, and once again by the cold redelivery)", got)
	}
}

// A URL that two messages admit is sent by the one whose admission won, even while that one has
// not sent it yet: the other finds it admitted by someone else, whatever its frontier remembers.
func TestAURLTwoMessagesAdmitIsSentOnce(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	snd := &fakeSender{failIDs: map[string]bool{"0": true}}
	cfg := Config{Rules: scope.DefaultRules(), FetchQueue: "fetch"}
	page := func(parent string) *message.Links {
		return &message.Links{Header: message.Header{Crawl: "c1"}, Root: "http://a.test/", Parent: parent, Depth: 1,
			URLs: []string{"http://a.test/shared"}}
	}
	first, second := page("http://a.test/1"), page("http://a.test/2")
	if Source(first) == Source(second) {
		t.Fatal("two pages' messages share a source")
	}
	f := New(cfg, withState(st, Deps{Send: snd, Log: quiet()}))
	if _, err := f.Admit(ctx, first); err == nil {
		t.Fatal("the first message's send failed, but its Admit did not")
	}
	// The second message, in the same frontier and in a cold one (another container).
	for i, fr := range []*Frontier{f, New(cfg, withState(st, Deps{Send: snd, Log: quiet()}))} {
		if res, err := fr.Admit(ctx, second); err != nil || res.Sent != 0 || res.Known != 1 {
			t.Errorf("second message, frontier %d = %+v, %v; want the URL known, not sent", i+1, res, err)
		}
	}
	// The first message comes back to the frontier that saw the second one: the URL is still its
	// to send, so that frontier must not have remembered it as sent.
	snd.failIDs = nil
	if res, err := f.Admit(ctx, first); err != nil || res.Sent != 1 {
		t.Errorf("the first message delivered again = %+v, %v; want the URL sent", res, err)
	}
	if got := snd.urls(t); len(got) != 1 {
		t.Errorf("sent %v, want the shared URL once", got)
	}
}

// urlKey is the table key of u.
func urlKey(t *testing.T, u string) string {
	t.Helper()
	n, err := urlnorm.Normalize(u)
	if err != nil {
		t.Fatal(err)
	}
	return urlnorm.Key(n.String())
}

func TestAdmitResendsUnsentAfterPartialFailure(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	snd := &fakeSender{failIDs: map[string]bool{"1": true}}
	// One host's URLs come due two seconds apart, so each goes in a message of its own.
	f := New(Config{Rules: scope.DefaultRules(), FetchQueue: "fetch", HostInterval: 2 * time.Second, RunURLs: -1}, withState(st, Deps{Send: snd, Log: quiet()}))
	m := seeds("http://a.test/1", "http://a.test/2", "http://a.test/3")
	if _, err := f.Admit(ctx, m); err == nil {
		t.Fatal("a failed send must fail the message so it is delivered again")
	}
	if got := snd.urls(t); len(got) != 2 || len(snd.bodies) != 2 {
		t.Fatalf("first attempt sent %v in %d messages, want 2 in 2", got, len(snd.bodies))
	}
	snd.failIDs = nil
	res, err := f.Admit(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	got := snd.urls(t)
	if res.Sent != 1 || len(got) != 3 || got[2] != "http://a.test/2" {
		t.Errorf("redelivery sent %+v, all sent %v; want exactly the unsent http://a.test/2", res, got)
	}
}

// TestURLsDueTogetherShareAMessage: the URLs of a Links message that come due at the same second
// go in one fetch message (one host each second), at most message.MaxPackedURLs in each, and a
// failed send of one leaves all its URLs to the redelivery.
func TestURLsDueTogetherShareAMessage(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	snd := &fakeSender{failIDs: map[string]bool{"0": true}}
	f := New(Config{Rules: scope.DefaultRules(), FetchQueue: "fetch", HostInterval: 2 * time.Second, RunURLs: -1}, withState(st, Deps{Send: snd, Log: quiet()}))
	var urls []string
	for h := range message.MaxPackedURLs + 5 {
		urls = append(urls, fmt.Sprintf("http://h%d.test/1", h), fmt.Sprintf("http://h%d.test/2", h))
	}
	m := seeds(urls...)
	if _, err := f.Admit(ctx, m); err == nil {
		t.Fatal("a failed send must fail the message so it is delivered again")
	}
	// Each host's first URL is due now, its second two seconds later: four messages (50 and 5 of
	// each time), the first of them failed.
	if got := snd.urls(t); len(snd.bodies) != 3 || len(got) != len(urls)-message.MaxPackedURLs {
		t.Fatalf("sent %d URLs in %d messages, want %d in 3", len(got), len(snd.bodies), len(urls)-message.MaxPackedURLs)
	}
	for _, b := range snd.bodies {
		fm, err := message.DecodeFetch(b)
		if err != nil {
			t.Fatal(err)
		}
		// A host's two slots are two seconds apart: one message holds at most one of them.
		first := fm.Split()[0].Slot
		for _, one := range fm.Split() {
			if d := one.Slot.Sub(first); one.Slot.IsZero() || d < -time.Second || d > time.Second {
				t.Errorf("one message holds slots %v apart (%v and %v)", d, first, one.Slot)
			}
		}
	}
	snd.failIDs = nil
	res, err := f.Admit(ctx, m)
	if err != nil || res.Sent != message.MaxPackedURLs {
		t.Fatalf("redelivery = %+v, %v; want the %d URLs of the failed message sent", res, err, message.MaxPackedURLs)
	}
	if got := snd.urls(t); len(got) != len(urls) || len(snd.bodies) != 4 {
		t.Errorf("sent %d URLs in %d messages in all, want %d in 4", len(got), len(snd.bodies), len(urls))
	}
}

func TestAdmitRecordsRefusals(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	snd := &fakeSender{}
	rules := scope.DefaultRules()
	rules.MaxDepth = 1
	f := New(Config{Rules: rules, FetchQueue: "fetch", MaxPages: 2}, withState(st, Deps{Send: snd, Log: quiet()}))
	page := &message.Links{Header: message.Header{Crawl: "c1"}, Root: "http://a.test/", Parent: "http://a.test/",
		Depth: 1, URLs: []string{"http://a.test/1", "http://other.test/", "http://a.test/2", "http://a.test/3"}}
	res, err := f.Admit(ctx, page)
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent != 2 || res.Rejected != 2 {
		t.Errorf("admit = %+v, want 2 sent and 2 rejected (one off-host, one over budget)", res)
	}
	deep := &message.Links{Header: message.Header{Crawl: "c1"}, Root: "http://a.test/", Depth: 2, URLs: []string{"http://a.test/deep"}}
	if res, _ := f.Admit(ctx, deep); res.Rejected != 1 {
		t.Errorf("a URL past the max depth was not rejected: %+v", res)
	}
	excluded := &message.Links{Header: message.Header{Crawl: "c1"}, Root: "http://a.test/", Depth: 1,
		URLs: []string{"http://a.test/private/x"}}
	f.cfg.Rules.Exclude, _ = scope.ParsePatterns([]string{"/private/"})
	if res, _ := f.Admit(ctx, excluded); res.Rejected != 1 {
		t.Errorf("an excluded URL was not rejected: %+v", res)
	}
	// Recorded skipped: the one over the budget and the excluded one, refused whoever links them.
	// The off-host and the too deep ones are not recorded: another root or a shorter path may
	// still bring them in (TestScopeDependsOnTheLinkNotTheURL).
	c, err := st.Counters(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if c.Seen != 4 || c.Skipped != 2 || c.Pending() != 2 || c.Classes[errclass.Scope] != 1 || c.Classes[errclass.Budget] != 1 {
		t.Errorf("counters = %+v, want 4 seen, 2 skipped (one budget, one scope), 2 pending", c)
	}
}

// TestScopeDependsOnTheLinkNotTheURL: a URL off the host of one seed is admitted when another
// seed's page links it, and a URL too deep on one path is admitted when a shorter path finds it,
// even through the same frontier that refused it first.
func TestScopeDependsOnTheLinkNotTheURL(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	snd := &fakeSender{}
	rules := scope.DefaultRules()
	rules.MaxDepth = 2
	f := New(Config{Rules: rules, FetchQueue: "fetch"}, withState(st, Deps{Send: snd, Log: quiet()}))
	links := func(root string, depth int, urls ...string) *message.Links {
		return &message.Links{Header: message.Header{Crawl: "c1"}, Root: root, Parent: root, Depth: depth, URLs: urls}
	}
	for _, step := range []struct {
		m          *message.Links
		sent, refd int
	}{
		{links("http://a.test/", 1, "http://b.test/x"), 0, 1},    // off a.test's host
		{links("http://a.test/", 3, "http://a.test/deep"), 0, 1}, // too deep on this path
		{links("http://b.test/", 1, "http://b.test/x"), 1, 0},    // on b.test's own host
		{links("http://a.test/", 1, "http://a.test/deep"), 1, 0}, // a shorter path
	} {
		res, err := f.Admit(ctx, step.m)
		if err != nil {
			t.Fatal(err)
		}
		if res.Sent != step.sent || res.Rejected != step.refd {
			t.Errorf("links %v from %s at depth %d: %+v, want %d sent and %d rejected",
				step.m.URLs, step.m.Root, step.m.Depth, res, step.sent, step.refd)
		}
	}
	if got := snd.urls(t); len(got) != 2 {
		t.Errorf("sent %v, want b.test/x and a.test/deep", got)
	}
}

func TestBloomFalsePositiveLosesNothing(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	snd := &fakeSender{}
	// A one-bit filter answers "maybe seen" for everything once anything is in it.
	f := New(Config{Rules: scope.DefaultRules(), FetchQueue: "fetch", BloomCapacity: 1, BloomFalsePositive: 0.9999}, withState(st, Deps{Send: snd, Log: quiet()}))
	if _, err := f.Admit(ctx, seeds("http://a.test/")); err != nil {
		t.Fatal(err)
	}
	res, err := f.Admit(ctx, seeds("http://b.test/", "http://c.test/"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent != 2 {
		t.Errorf("with a saturated filter, new URLs sent = %d, want 2", res.Sent)
	}
}

func TestPerHostBudgetStopsATrap(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	snd := &fakeSender{}
	f := New(Config{Rules: scope.DefaultRules(), FetchQueue: "fetch", MaxPagesPerHost: 3}, withState(st, Deps{Send: snd, Log: quiet()}))
	m := &message.Links{Header: message.Header{Crawl: "c1"}, Root: "http://trap.test/", Depth: 1,
		URLs: []string{"http://trap.test/a", "http://trap.test/b", "http://trap.test/c", "http://trap.test/d", "http://trap.test/e"}}
	res, err := f.Admit(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent != 3 || res.Rejected != 2 {
		t.Errorf("admit = %+v, want 3 sent and 2 rejected by the per-host budget", res)
	}
	c, err := st.Tally(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if c.Classes[errclass.Trap] != 2 {
		t.Errorf("classes = %v, want 2 trap", c.Classes)
	}
}

// TestTheBudgetGoesToAMessagesFirstURLs: a message of more URLs than the crawl's budget has pages
// left, all admitted at once, sends its first URLs and refuses the rest, in the message's order,
// every time; so does the per-host budget.
func TestTheBudgetGoesToAMessagesFirstURLs(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"crawl", Config{MaxPages: 7}},
		{"host", Config{MaxPagesPerHost: 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var urls []string
			for i := range 24 {
				urls = append(urls, fmt.Sprintf("http://a.test/%d", i))
			}
			for range 10 {
				ctx := context.Background()
				snd := &fakeSender{}
				cfg := tc.cfg
				cfg.Rules, cfg.FetchQueue, cfg.AdmitConcurrency = scope.DefaultRules(), "fetch", len(urls)
				f := New(cfg, withState(newStore(t), Deps{Send: snd, Log: quiet()}))
				res, err := f.Admit(ctx, seeds(urls...))
				if err != nil {
					t.Fatal(err)
				}
				got := snd.urls(t)
				slices.Sort(got)
				want := slices.Clone(urls[:7])
				slices.Sort(want)
				if res.Sent != 7 || !slices.Equal(got, want) {
					t.Fatalf("admit = %+v, sent %v; want the message's first 7 URLs", res, got)
				}
			}
		})
	}
}

// failBudget fails the first n updates of budget items, as a throttled table would.
type failBudget struct {
	table.Table
	left atomic.Int32
}

func (f *failBudget) Update(ctx context.Context, key table.Key, u table.Update, c table.Cond) (table.Item, error) {
	if crawlstate.KindOf(key) == "crawl" && u.Add["budget"] != 0 && f.left.Add(-1) >= 0 {
		return nil, errors.New("throttled")
	}
	return f.Table.Update(ctx, key, u, c)
}

func TestBudgetIsReservedAgainAfterAFailure(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tb := &failBudget{Table: db.Table("crawl")}
	tb.left.Store(1)
	st := crawlstate.New(tb)
	snd := &fakeSender{}
	f := New(Config{Rules: scope.DefaultRules(), FetchQueue: "fetch", MaxPages: 1}, withState(st, Deps{Send: snd, Log: quiet()}))
	m := seeds("http://a.test/")
	if _, err := f.Admit(ctx, m); err == nil {
		t.Fatal("a failed budget reservation must fail the message")
	}
	if _, err := f.Admit(ctx, m); err != nil { // the redelivery
		t.Fatal(err)
	}
	if len(snd.urls(t)) != 1 {
		t.Fatalf("sent %v, want the URL once", snd.urls(t))
	}
	// The budget of 1 is used up by that URL: a second URL must be refused.
	if res, _ := f.Admit(ctx, seeds("http://b.test/")); res.Sent != 0 || res.Rejected != 1 {
		t.Errorf("a URL past the budget: %+v, want it rejected (the first URL's budget was reserved)", res)
	}
}

// TestRecentLinksCostNoTableCall: a link to a URL the table confirmed a moment ago, in its
// normalised form (as parse sends it) or spelled another way, is known without a table call; a
// cold frontier asks the table.
func TestRecentLinksCostNoTableCall(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	tb := &embedtest.CountingTable{Table: db.Table("crawl")}
	st := crawlstate.New(tb)
	cfg := Config{Rules: scope.DefaultRules(), FetchQueue: "fetch"}
	f := New(cfg, withState(st, Deps{Send: &fakeSender{}, Log: quiet()}))
	links := func(urls ...string) *message.Links {
		return &message.Links{Header: message.Header{Crawl: "c1"}, Root: "http://a.test/", Depth: 1, URLs: urls}
	}
	if res, err := f.Admit(ctx, links("http://a.test/x", "http://b.test/out-of-scope")); err != nil || res.Sent != 1 || res.Rejected != 1 {
		t.Fatalf("first admit = %+v, %v; want 1 sent, 1 rejected", res, err)
	}
	again := links("http://a.test/x", "HTTP://A.test:80/x#top", "http://b.test/out-of-scope")
	before := tb.Calls()
	res, err := f.Admit(ctx, again)
	if err != nil {
		t.Fatal(err)
	}
	if res.Known+res.Rejected != 3 || res.Sent != 0 {
		t.Errorf("admit again = %+v, want nothing sent", res)
	}
	if n := tb.Calls() - before; n != 0 {
		t.Errorf("%d table calls for links confirmed a moment ago, want 0", n)
	}
	before = tb.Calls()
	if res, err := New(cfg, withState(st, Deps{Send: &fakeSender{}, Log: quiet()})).Admit(ctx, again); err != nil || res.Sent != 0 {
		t.Fatalf("cold admit = %+v, %v; want nothing sent", res, err)
	}
	if tb.Calls() == before {
		t.Error("a cold frontier knew the links without asking the table")
	}
}

// BenchmarkAdmitKnownLinks admits a page's 20 links that the crawl already knows, as most links
// of a crawl are.
func BenchmarkAdmitKnownLinks(b *testing.B) {
	ctx := context.Background()
	db, err := sqlite.Open(filepath.Join(b.TempDir(), "state.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	f := New(Config{Rules: scope.DefaultRules(), FetchQueue: "fetch"}, withState(crawlstate.New(db.Table("crawl")), Deps{Send: &fakeSender{}, Log: quiet()}))
	m := &message.Links{Header: message.Header{Crawl: "c1"}, Root: "http://a.test/", Depth: 1}
	for i := range 20 {
		m.URLs = append(m.URLs, "http://a.test/p/"+strings.Repeat("x", i))
	}
	if res, err := f.Admit(ctx, m); err != nil || res.Sent != 20 {
		b.Fatalf("first admit = %+v, %v", res, err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if res, err := f.Admit(ctx, m); err != nil || res.Known != 20 {
			b.Fatalf("admit = %+v, %v", res, err)
		}
	}
}

// failKey fails the first write of one item, as a throttled table would.
type failKey struct {
	table.Table
	key  table.Key
	left atomic.Int32
}

func (f *failKey) fail(key table.Key) error {
	if key == f.key && f.left.Add(-1) >= 0 {
		return errors.New("throttled")
	}
	return nil
}

func (f *failKey) Put(ctx context.Context, key table.Key, it table.Item, c table.Cond) error {
	if err := f.fail(key); err != nil {
		return err
	}
	return f.Table.Put(ctx, key, it, c)
}

func (f *failKey) Update(ctx context.Context, key table.Key, u table.Update, c table.Cond) (table.Item, error) {
	if err := f.fail(key); err != nil {
		return nil, err
	}
	return f.Table.Update(ctx, key, u, c)
}

// TestAFailedAdmissionStopsNoOtherURL: when the table fails one URL of a message, the others are
// admitted and sent all the same and the message fails; its redelivery sends only that URL, and
// asks the table nothing about the others. So a message of many links gets through a table that
// fails now and then, instead of failing whole at every delivery.
func TestAFailedAdmissionStopsNoOtherURL(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const crawl = "c1"
	tb := &failKey{Table: db.Table("crawl"), key: crawlstate.URLKey(crawl, urlKey(t, "http://b.test/"))}
	tb.left.Store(1)
	snd := &fakeSender{}
	f := New(Config{Rules: scope.DefaultRules(), FetchQueue: "fetch"}, withState(crawlstate.New(tb), Deps{Send: snd, Log: quiet()}))
	m := &message.Links{Header: message.Header{Crawl: crawl}, URLs: []string{"http://a.test/", "http://b.test/", "http://c.test/"}}
	res, err := f.Admit(ctx, m)
	if err == nil || !strings.Contains(err.Error(), "throttled") {
		t.Fatalf("Admit = %v, want the table's error: the message must be delivered again", err)
	}
	if got := snd.urls(t); res.Sent != 2 || len(got) != 2 || slices.Contains(got, "http://b.test/") {
		t.Fatalf("first delivery sent %v (%+v), want a and c", got, res)
	}
	res, err = f.Admit(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if got := snd.urls(t); res.Sent != 1 || res.Known != 2 || len(got) != 3 || got[2] != "http://b.test/" {
		t.Errorf("redelivery: %+v, all sent %v; want b sent and a and c known", res, got)
	}
}

// TestAURLResentForAnotherDeliveryIsNotRemembered: two deliveries of one links message at once.
// The first admits a URL; the second finds it unsent and sends it too; then the first fails to
// reserve the URL's budget and takes the admission back. The redelivery of the first must admit
// the URL afresh: had the second remembered it as sent, the frontier would call it known, and the
// URL would be lost (its only fetch message finds no item).
func TestAURLResentForAnotherDeliveryIsNotRemembered(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	snd := &fakeSender{}
	f := New(Config{Rules: scope.DefaultRules(), FetchQueue: "fetch"}, withState(st, Deps{Send: snd, Log: quiet()}))
	m := seeds("http://a.test/")
	key := urlKey(t, "http://a.test/")
	// The first delivery's admission, as Admit writes it.
	if res, err := st.Admit(ctx, "c1", key, "http://a.test/", "http://a.test/", 0, Source(m)); err != nil || res != crawlstate.Admitted {
		t.Fatalf("admit = %v, %v", res, err)
	}
	// The second delivery finds it unsent and sends it.
	if res, err := f.Admit(ctx, m); err != nil || res.Sent != 1 {
		t.Fatalf("second delivery: %+v, %v; want the URL sent", res, err)
	}
	// The first delivery's budget reservation fails: it takes the admission back.
	if err := st.Unadmit(ctx, "c1", key, key); err != nil {
		t.Fatal(err)
	}
	// Its redelivery, on the same frontier, must admit and send the URL again.
	res, err := f.Admit(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent != 1 {
		t.Errorf("redelivery: %+v, want the URL admitted afresh and sent", res)
	}
	if _, err := st.Get(ctx, "c1", key); err != nil {
		t.Errorf("the URL has no item after the redelivery: %v", err)
	}
}

// expiringTable is a table that does not say it keeps items past their expiry, as DynamoDB's
// does not: the embedded table behind it is taken to delete them (crawlstate's keeper).
type expiringTable struct{ table.Table }

// TestAnOldCrawlAdmitsNothingNew: once a crawl on a table that deletes expired items is older
// than its admission window, with no renewal of its items, a new URL is recorded skipped (class
// scope) and not sent, while a URL it admitted before is still known.
func TestAnOldCrawlAdmitsNothingNew(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	now := start
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st := crawlstate.New(expiringTable{db.Table("crawl")}, crawlstate.WithClock(func() time.Time { return now }))
	snd := &fakeSender{}
	f := New(Config{Rules: scope.DefaultRules(), FetchQueue: "fetch"}, withState(st, Deps{Send: snd, Log: quiet()}))
	if err := f.Start(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	if res, err := f.Admit(ctx, seeds("http://a.test/")); err != nil || res.Sent != 1 {
		t.Fatalf("a new crawl: %+v, %v; want the seed sent", res, err)
	}
	now = start.Add(crawlstate.DefaultRetention - crawlstate.MinItemLife + time.Hour)
	f = New(Config{Rules: scope.DefaultRules(), FetchQueue: "fetch"}, withState(st, Deps{Send: snd, Log: quiet()})) // a cold frontier
	res, err := f.Admit(ctx, &message.Links{Header: message.Header{Crawl: "c1"}, Root: "http://a.test/",
		Depth: 1, URLs: []string{"http://a.test/new"}})
	if err != nil || res.Sent != 0 || res.Rejected != 1 {
		t.Errorf("an old crawl: %+v, %v; want the new URL rejected", res, err)
	}
	u, err := st.Get(ctx, "c1", urlKey(t, "http://a.test/new"))
	if err != nil || u.State != crawlstate.Skipped || u.Class != errclass.Scope {
		t.Errorf("the refused URL = %+v, %v; want skipped with class scope", u, err)
	}
	if got := snd.urls(t); len(got) != 1 {
		t.Errorf("sent %v, want the seed alone", got)
	}
}

// entrySender records the entries sent.
type entrySender struct {
	mu      sync.Mutex
	entries []queue.Entry
}

func (s *entrySender) SendBatch(_ context.Context, _ string, entries []queue.Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries = append(s.entries, entries...)
	return nil
}

// Each fetch message goes out with its host's politeness slot and a delay that brings it back
// just before it: the slots of a message's URLs of one host are booked with one write, and no
// slot is booked beyond the horizon. The lone URL of a host that the store knows no booking of
// goes without a slot, at once, and with no write: its fetcher takes the slot when it arrives.
func TestFetchMessagesGoOutWithTheirSlots(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	writes := &embedtest.CountingTable{Table: db.Table("crawl"), Only: func(k table.Key) bool { return crawlstate.KindOf(k) == "slot" }}
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	st := crawlstate.New(writes, crawlstate.WithClock(func() time.Time { return t0 }))
	snd := &entrySender{}
	f := New(Config{Rules: scope.DefaultRules(), FetchQueue: "fetch", HostInterval: 1500 * time.Millisecond, RunURLs: -1}, withState(st, Deps{Send: snd, Log: quiet()}))
	f.now = st.Now
	// c.test is booked by others until 1s before the horizon: one of its two URLs gets a slot.
	if _, err := st.ReserveSlots(ctx, "c.test", 1500*time.Millisecond, 599, 0); err != nil {
		t.Fatal(err)
	}
	before := writes.Writes()
	m := seeds("http://a.test/1", "http://b.test/1", "http://a.test/2", "http://a.test/3", "http://c.test/1", "http://c.test/2")
	if res, err := f.Admit(ctx, m); err != nil || res.Sent != 6 {
		t.Fatalf("Admit = %+v, %v; want 6 sent", res, err)
	}
	got := map[string]queue.Entry{}
	msgs := map[string]*message.Fetch{}
	for _, e := range snd.entries {
		fm, err := message.DecodeFetch(e.Body)
		if err != nil {
			t.Fatal(err)
		}
		for _, one := range fm.Split() {
			got[one.URL], msgs[one.URL] = e, one
		}
	}
	// A host's slots go to its URLs in the order their groups were given (frontier/groups.go),
	// which the concurrent admissions decide: compare each host's slots as a set.
	type sent struct {
		slot  time.Duration // from t0; -1: no slot
		delay time.Duration
	}
	want := map[string][]sent{
		"a.test": {{0, 0}, {1500 * time.Millisecond, time.Second}, {3 * time.Second, 3 * time.Second}},
		"b.test": {{-1, 0}}, // idle and alone: no slot, no write, no delay
		"c.test": {{898500 * time.Millisecond, 898 * time.Second}, {-1, queue.MaxDelay}},
	}
	have := map[string][]sent{}
	for u, fm := range msgs {
		e := got[u]
		s := sent{-1, e.Delay}
		if !fm.Slot.IsZero() {
			s.slot = fm.Slot.Sub(t0)
		}
		if (s.slot >= 0) != (fm.Gap == 1500) {
			t.Errorf("%s: slot %v with gap %dms", u, fm.Slot, fm.Gap)
		}
		host := strings.TrimPrefix(u, "http://")
		host = host[:strings.IndexByte(host, '/')]
		have[host] = append(have[host], s)
	}
	for host, list := range have {
		slices.SortFunc(list, func(a, b sent) int { return cmp.Compare(a.delay, b.delay) })
		if !reflect.DeepEqual(list, want[host]) {
			t.Errorf("%s: slots and delays %v, want %v", host, list, want[host])
		}
	}
	if len(have) != len(want) {
		t.Errorf("URLs sent for %d hosts, want %d", len(have), len(want))
	}
	if n := writes.Writes() - before; n != 2 {
		t.Errorf("%d slot writes for 3 hosts, want 2 (a.test's and c.test's)", n)
	}
	// a.test's booking took DefaultSpareSlots more: its next two URLs get them without a write,
	// the third books again.
	for i, w := range []struct {
		url    string
		slot   time.Duration
		writes int64
	}{{"http://a.test/4", 4500 * time.Millisecond, 0}, {"http://a.test/5", 6 * time.Second, 0}, {"http://a.test/6", 7500 * time.Millisecond, 1}} {
		before, snd.entries = writes.Writes(), nil
		if res, err := f.Admit(ctx, seeds(w.url)); err != nil || res.Sent != 1 {
			t.Fatalf("Admit %s = %+v, %v", w.url, res, err)
		}
		fm, err := message.DecodeFetch(snd.entries[0].Body)
		if err != nil {
			t.Fatal(err)
		}
		if !fm.Slot.Equal(t0.Add(w.slot)) || writes.Writes()-before != w.writes {
			t.Errorf("URL %d of a.test more: slot %v after %d slot writes, want %v after %d", i+1, fm.Slot.Sub(t0), writes.Writes()-before, w.slot, w.writes)
		}
	}
}

// TestAFetchMessageHoldsOneURLOfEachHost: URLs due together share a message only across hosts, so
// that none of a message's URLs waits behind another of its host.
func TestAFetchMessageHoldsOneURLOfEachHost(t *testing.T) {
	snd := &fakeSender{}
	f := New(Config{Rules: scope.DefaultRules(), FetchQueue: "fetch"}, withState(newStore(t), Deps{Send: snd, Log: quiet()}))
	m := seeds("http://a.test/1", "http://a.test/2", "http://b.test/1", "http://a.test/3", "http://c.test/1")
	if res, err := f.Admit(context.Background(), m); err != nil || res.Sent != 5 {
		t.Fatalf("Admit = %+v, %v; want 5 sent", res, err)
	}
	var got [][]string
	for _, b := range snd.bodies {
		fm, err := message.DecodeFetch(b)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fm.URLList())
	}
	// Which of a.test's URLs goes with b.test's and c.test's is the concurrent admissions' choice.
	sizes := []int{}
	for _, urls := range got {
		sizes = append(sizes, len(urls))
		hosts := map[string]bool{}
		for _, u := range urls {
			h := strings.Split(u, "/")[2]
			if hosts[h] {
				t.Errorf("fetch message %v holds two URLs of %s", urls, h)
			}
			hosts[h] = true
		}
	}
	slices.Sort(sizes)
	if !reflect.DeepEqual(sizes, []int{1, 1, 3}) {
		t.Errorf("fetch messages = %v, want one of a.test's URLs with b.test's and c.test's, and two alone", got)
	}
}

// gatedPuts holds each admission's write of a URL item until want of them are waiting at once,
// and records the most that ever were.
type gatedPuts struct {
	table.Table
	kind string // the kind of item whose puts wait (crawlstate.KindOf)
	want int

	mu       sync.Mutex
	inFlight int
	most     int
	opened   bool
	reached  chan struct{}
}

func (g *gatedPuts) Put(ctx context.Context, key table.Key, it table.Item, c table.Cond) error {
	if crawlstate.KindOf(key) != g.kind {
		return g.Table.Put(ctx, key, it, c)
	}
	g.mu.Lock()
	g.inFlight++
	g.most = max(g.most, g.inFlight)
	if g.inFlight == g.want && !g.opened {
		g.opened = true
		close(g.reached)
	}
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.inFlight--
		g.mu.Unlock()
	}()
	select {
	case <-g.reached:
	case <-ctx.Done():
		return ctx.Err()
	}
	return g.Table.Put(ctx, key, it, c)
}

// TestAdmitConcurrencyBoundsTheURLsAdmittedAtOnce: a message's URLs are admitted
// Config.AdmitConcurrency at a time, DefaultAdmitConcurrency unless set. Each admission's write
// waits until that many are waiting: fewer at once would never get through, more would be seen.
func TestAdmitConcurrencyBoundsTheURLsAdmittedAtOnce(t *testing.T) {
	for _, tc := range []struct{ set, want int }{{0, DefaultAdmitConcurrency}, {3, 3}, {20, 20}} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		db, err := sqlite.Open(filepath.Join(t.TempDir(), "state.db"))
		if err != nil {
			t.Fatal(err)
		}
		tb := &gatedPuts{Table: db.Table("crawl"), kind: "url", want: tc.want, reached: make(chan struct{})}
		f := New(Config{Rules: scope.DefaultRules(), FetchQueue: "fetch", AdmitConcurrency: tc.set}, withState(crawlstate.New(tb), Deps{Send: &fakeSender{}, Log: quiet()}))
		var urls []string
		for i := range 60 {
			urls = append(urls, fmt.Sprintf("http://h%d.test/", i))
		}
		res, err := f.Admit(ctx, seeds(urls...))
		if err != nil || res.Sent != len(urls) {
			t.Errorf("AdmitConcurrency %d: Admit = %+v, %v; want all %d sent (a bound below %d never lets the writes through)",
				tc.set, res, err, len(urls), tc.want)
		}
		if tb.most != tc.want {
			t.Errorf("AdmitConcurrency %d: %d admissions at once at most, want %d", tc.set, tb.most, tc.want)
		}
		cancel()
		db.Close()
	}
}
