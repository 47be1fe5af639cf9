package crawlstate

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/session"
	"github.com/crawlstack/crawlstack/shared/port/table"
	"github.com/crawlstack/crawlstack/shared/port/table/tabletest"
)

// changes are the changes of an answer from host that set the Set-Cookie lines.
func changes(t *testing.T, host string, lines ...string) []session.Change {
	t.Helper()
	h := http.Header{}
	for _, l := range lines {
		h.Add("Set-Cookie", l)
	}
	return session.Learn(&url.URL{Scheme: "https", Host: host, Path: "/"}, (&http.Response{Header: h}).Cookies(),
		time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
}

func jarNames(t *testing.T, s *Sessions, crawl, host string) []string {
	t.Helper()
	got, err := s.LoadJar(context.Background(), crawl, host)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range got {
		out = append(out, c.Name+"="+c.Value)
	}
	slices.Sort(out)
	return out
}

// testJarSavesLoseNothing: two invocations that read the jar at once and save one after the
// other both keep their cookies (the second's write loses to the first's and applies its changes
// on top); a save whose write was applied and then replayed (its answer lost) is recognised as
// its own and leaves the jar as one save would; a save that changes nothing writes nothing.
func testJarSavesLoseNothing(t *testing.T, tb table.Table) {
	ctx := context.Background()
	crawl := crawlName(t)
	f := tabletest.NewFaults(tb)
	wc := &writeCount{Table: f}
	c := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	s := NewSessions(wc, c.now)
	jarWrites := func() int {
		wc.mu.Lock()
		defer wc.mu.Unlock()
		return wc.n[JarKey(crawl, "h.test")]
	}
	if _, err := s.SaveJar(ctx, crawl, "h.test", changes(t, "h.test", "base=0; Path=/"), "T0"); err != nil {
		t.Fatal(err)
	}
	// A's write finds B's in its place: the step between A's read and A's write.
	other := NewSessions(tb, c.now)
	racing := &raceTable{Table: wc, before: func() {
		if _, err := other.SaveJar(ctx, crawl, "h.test", changes(t, "h.test", "b=2; Path=/"), "TB"); err != nil {
			t.Error(err)
		}
	}}
	a := NewSessions(racing, c.now)
	if _, err := a.SaveJar(ctx, crawl, "h.test", changes(t, "h.test", "a=1; Path=/", "base=; Path=/; Max-Age=-1"), "TA"); err != nil {
		t.Fatal(err)
	}
	if got, want := jarNames(t, s, crawl, "h.test"), []string{"a=1", "b=2"}; !slices.Equal(got, want) {
		t.Errorf("after two saves at once, the jar holds %v, want %v", got, want)
	}
	// Replayed: the put is applied, and sent again.
	f.Add(tabletest.Rule{Op: "put", Key: JarKey(crawl, "h.test"), Nth: 1})
	before := jarWrites()
	if _, err := s.SaveJar(ctx, crawl, "h.test", changes(t, "h.test", "c=3; Path=/"), "TC"); err != nil {
		t.Fatalf("a save whose write was replayed: %v", err)
	}
	if len(f.Injected()) != 1 {
		t.Fatalf("faults injected %v, want the jar's write replayed", f.Injected())
	}
	if got, want := jarNames(t, s, crawl, "h.test"), []string{"a=1", "b=2", "c=3"}; !slices.Equal(got, want) {
		t.Errorf("after a replayed save, the jar holds %v, want %v", got, want)
	}
	if n := jarWrites() - before; n != 1 {
		t.Errorf("a replayed save made %d writes of its own, want 1 (the SDK's replay is not one)", n)
	}
	it, err := tb.Get(ctx, JarKey(crawl, "h.test"))
	if err != nil {
		t.Fatal(err)
	}
	if v := it.Int(attrJarVer); v != 4 {
		t.Errorf("the jar's version is %d after four saves, want 4", v)
	}
	before = jarWrites()
	if _, err := s.SaveJar(ctx, crawl, "h.test", changes(t, "h.test", "c=3; Path=/"), "TD"); err != nil {
		t.Fatal(err)
	}
	if n := jarWrites() - before; n != 0 {
		t.Errorf("a save that changes nothing wrote %d times, want 0", n)
	}
	// An erasure of the host deletes its jar, and no other host's.
	if _, err := s.SaveJar(ctx, crawl, "keep.test", changes(t, "keep.test", "k=1; Path=/"), "TK"); err != nil {
		t.Fatal(err)
	}
	n, err := DeleteJars(ctx, tb, crawl, func(h string) bool { return h == "h.test" }, false)
	if err != nil || n != 1 {
		t.Fatalf("DeleteJars = %d, %v; want 1", n, err)
	}
	if got := jarNames(t, s, crawl, "h.test"); len(got) != 0 {
		t.Errorf("an erased jar still holds %v", got)
	}
	if got := jarNames(t, s, crawl, "keep.test"); len(got) != 1 {
		t.Errorf("another host's jar holds %v after an erasure, want its cookie", got)
	}
}

// raceTable runs before ahead of its first Put: another writer's step just before this one's.
type raceTable struct {
	table.Table
	before func()
	done   bool
}

func (r *raceTable) Put(ctx context.Context, key table.Key, it table.Item, cond table.Cond) error {
	if !r.done {
		r.done = true
		r.before()
	}
	return r.Table.Put(ctx, key, it, cond)
}

// testLoginsClaimOnceAndCount: one owner at a time claims a host's login; a claim for a session
// generation that has moved on, or past max, is refused with the state that says why; a claim
// and an end whose writes were replayed (their answers lost) are recognised as their own and
// count once.
func testLoginsClaimOnceAndCount(t *testing.T, tb table.Table) {
	ctx := context.Background()
	crawl := crawlName(t)
	f := tabletest.NewFaults(tb)
	c := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	s := NewSessions(f, c.now)
	f.Add(tabletest.Rule{Op: "update", Key: loginKey(crawl, "h.test"), Nth: 1}) // A's claim, replayed
	ok, _, err := s.ClaimLogin(ctx, crawl, "h.test", "A", 0, 2, time.Minute)
	if err != nil || !ok {
		t.Fatalf("A's replayed claim = %v, %v; want it held", ok, err)
	}
	if ok, st, err := s.ClaimLogin(ctx, crawl, "h.test", "B", 0, 2, time.Minute); err != nil || ok || st.HeldBy != "A" {
		t.Fatalf("B's claim while A holds = %v, %+v, %v; want refused, held by A", ok, st, err)
	}
	f.Add(tabletest.Rule{Op: "update", Key: loginKey(crawl, "h.test"), Nth: 1}) // A's end, replayed
	st, err := s.EndLogin(ctx, crawl, "h.test", "A", true)
	if err != nil || st.Gen != 1 || st.Logins != 1 {
		t.Fatalf("A's replayed end = %+v, %v; want generation 1 after 1 login", st, err)
	}
	if len(f.Injected()) != 2 {
		t.Fatalf("faults injected %v, want the claim and the end replayed", f.Injected())
	}
	// B saw generation 0 expire: A's new session is there.
	if ok, st, err := s.ClaimLogin(ctx, crawl, "h.test", "B", 0, 2, time.Minute); err != nil || ok || st.Gen != 1 {
		t.Fatalf("B's claim of an old generation = %v, %+v, %v; want refused, generation 1", ok, st, err)
	}
	if ok, _, err := s.ClaimLogin(ctx, crawl, "h.test", "B", 1, 2, time.Minute); err != nil || !ok {
		t.Fatalf("B's claim of generation 1 = %v, %v; want held", ok, err)
	}
	if st, err := s.EndLogin(ctx, crawl, "h.test", "B", false); err != nil || st.Gen != 1 || st.Logins != 2 {
		t.Fatalf("B's refused login = %+v, %v; want generation 1 after 2 logins", st, err)
	}
	if ok, st, err := s.ClaimLogin(ctx, crawl, "h.test", "C", 1, 2, time.Minute); err != nil || ok || st.Logins != 2 {
		t.Fatalf("a claim past max = %v, %+v, %v; want refused after 2 logins", ok, st, err)
	}
	// A claim whose owner vanished lapses with its lease.
	s2 := NewSessions(tb, c.now)
	if ok, _, _ := s2.ClaimLogin(ctx, crawl, "other.test", "D", 0, 3, time.Minute); !ok {
		t.Fatal("D's claim refused")
	}
	c.t = c.t.Add(2 * time.Minute)
	if ok, _, err := s2.ClaimLogin(ctx, crawl, "other.test", "E", 0, 3, time.Minute); err != nil || !ok {
		t.Fatalf("a claim after D's lease lapsed = %v, %v; want held", ok, err)
	}
}
