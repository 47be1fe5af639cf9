package frontier

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/scope"
	"github.com/crawlstack/crawlstack/shared/local/sqlite"
	"github.com/crawlstack/crawlstack/shared/port/table"
	"github.com/crawlstack/crawlstack/shared/testkit/embedtest"
)

// TestPoliteHostsGetRuns: a host held to a page a second gets its URLs in runs, each message of
// one host and one group holding up to RunURLs URLs, every URL sent once; a run is sent at once,
// with no slot and no slot write (its fetcher books the run's slots as it starts it). Without runs
// every URL holds a slot of its own; a faster host still gets one URL of each host a message.
func TestPoliteHostsGetRuns(t *testing.T) {
	for _, tc := range []struct {
		name     string
		interval time.Duration
		runURLs  int
		span     time.Duration
		want     []int // URLs per message of a.test, in slot order
	}{
		{"runs of 10", time.Second, DefaultRunURLs, 0, []int{10, 10, 5}},
		{"off by default", time.Second, 0, 0, slices.Repeat([]int{1}, 25)},
		{"runs of 30", time.Second, 30, 0, []int{25}},
		{"span bounds the run", time.Second, DefaultRunURLs, 3 * time.Second, []int{4, 4, 4, 4, 4, 4, 1}},
		{"runs of 6", time.Second, 6, 0, []int{6, 6, 6, 6, 1}},
		{"no runs", time.Second, -1, 0, slices.Repeat([]int{1}, 25)},
		{"a faster host", 500 * time.Millisecond, DefaultRunURLs, 0, nil}, // checked below: at most one URL of the host a message
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			db, err := sqlite.Open(filepath.Join(t.TempDir(), "state.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			writes := &embedtest.CountingTable{Table: db.Table("crawl"), Only: func(k table.Key) bool { return crawlstate.KindOf(k) == "slot" }}
			st := crawlstate.New(writes)
			snd := &entrySender{}
			runs := tc.want != nil && tc.want[0] > 1
			f := New(Config{Rules: scope.DefaultRules(), FetchQueue: "fetch", HostInterval: tc.interval, RunURLs: tc.runURLs,
				RunSpan: tc.span}, withState(st, Deps{Send: snd, Log: quiet()}))
			var urls []string
			for i := range 25 {
				urls = append(urls, fmt.Sprintf("http://a.test/%d", i))
			}
			if res, err := f.Admit(ctx, seeds(urls...)); err != nil || res.Sent != 25 {
				t.Fatalf("admit = %+v, %v; want 25 sent", res, err)
			}
			type msg struct {
				slots  []time.Time
				groups map[string]bool
			}
			var msgs []msg
			seen := map[string]bool{}
			var slots []time.Time
			for _, e := range snd.entries {
				if runs && e.Delay != 0 {
					t.Errorf("a run sent with delay %v, want none: its fetcher books its slots", e.Delay)
				}
				fm, err := message.DecodeFetch(e.Body)
				if err != nil {
					t.Fatal(err)
				}
				m := msg{groups: map[string]bool{}}
				for _, one := range fm.Split() {
					if seen[one.URL] {
						t.Errorf("%s sent twice", one.URL)
					}
					seen[one.URL] = true
					if one.Slot.IsZero() != runs {
						t.Errorf("%s sent with slot %v, want a slot: %v", one.URL, one.Slot, !runs)
					}
					m.slots = append(m.slots, one.Slot)
					m.groups[one.Group] = true
					slots = append(slots, one.Slot)
				}
				if len(m.groups) != 1 {
					t.Errorf("a message of %d groups, want 1", len(m.groups))
				}
				if !slices.IsSortedFunc(m.slots, func(a, b time.Time) int { return a.Compare(b) }) {
					t.Errorf("a message's slots out of order: %v", m.slots)
				}
				msgs = append(msgs, m)
			}
			if len(seen) != 25 {
				t.Errorf("sent %d URLs, want 25", len(seen))
			}
			if n := writes.Writes(); runs && n != 0 {
				t.Errorf("%d slot writes for runs, want none", n)
			}
			slices.SortFunc(slots, func(a, b time.Time) int { return a.Compare(b) })
			for i := 1; i < len(slots) && !runs; i++ {
				if gap := slots[i].Sub(slots[i-1]); gap < tc.interval {
					t.Errorf("slots %d and %d %v apart, want at least %v", i-1, i, gap, tc.interval)
				}
			}
			if !runs {
				slices.SortFunc(msgs, func(a, b msg) int { return a.slots[0].Compare(b.slots[0]) })
			}
			var sizes []int
			groups := map[string]bool{}
			for _, m := range msgs {
				sizes = append(sizes, len(m.slots))
				for g := range m.groups {
					if tc.want != nil && groups[g] {
						t.Errorf("group %s in two messages", g)
					}
					groups[g] = true
				}
			}
			if tc.want == nil {
				if slices.Max(sizes) != 1 {
					t.Errorf("a host at %v: messages of %v URLs, want one URL of the host in each", tc.interval, sizes)
				}
				return
			}
			if runs {
				slices.SortFunc(sizes, func(a, b int) int { return b - a }) // sent together, in any order
			}
			if !slices.Equal(sizes, tc.want) {
				t.Errorf("messages of %v URLs, want %v", sizes, tc.want)
			}
		})
	}
}

// TestLonePoliteURLsShareAMessage: a polite host's lone URL (the only one of its host in its Links
// message, no run of the host open in the batch) goes in a group of such URLs, one of each host, at
// most message.MaxPackedURLs, sent at once without a slot like a run; a host with several URLs in
// a message gets a run, and a lone URL of a host whose run is open in the batch joins that run.
func TestLonePoliteURLsShareAMessage(t *testing.T) {
	ctx := WithGroups(context.Background())
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	writes := &embedtest.CountingTable{Table: db.Table("crawl"), Only: func(k table.Key) bool { return crawlstate.KindOf(k) == "slot" }}
	snd := &entrySender{}
	f := New(Config{Rules: scope.DefaultRules(), FetchQueue: "fetch", SlowQueue: "slow", HostInterval: time.Second,
		RunURLs: DefaultRunURLs, RunSpan: DefaultRunSpan}, withState(crawlstate.New(writes), Deps{Send: snd, Log: quiet()}))
	var first []string
	for i := range 12 {
		first = append(first, fmt.Sprintf("http://h%d.test/a", i)) // 12 lone URLs
	}
	first = append(first, "http://big.test/1", "http://big.test/2", "http://big.test/3")
	second := []string{"http://big.test/4", "http://h0.test/b", "http://new.test/a"}
	var staged []*Staged
	for _, urls := range [][]string{first, second} {
		st, err := f.Stage(ctx, seeds(urls...))
		if err != nil {
			t.Fatal(err)
		}
		staged = append(staged, st)
	}
	for _, err := range f.Send(ctx, staged) {
		if err != nil {
			t.Fatal(err)
		}
	}
	var got []string // each message's URLs' paths, host by host, sorted
	seen := map[string]bool{}
	for _, e := range snd.entries {
		if e.Delay != 0 {
			t.Errorf("a message sent with delay %v, want none", e.Delay)
		}
		fm, err := message.DecodeFetch(e.Body)
		if err != nil {
			t.Fatal(err)
		}
		hosts := map[string]int{}
		var paths []string
		for _, one := range fm.Split() {
			if !one.Slot.IsZero() || one.Group != fm.Split()[0].Group || seen[one.URL] {
				t.Errorf("%s: slot %v, group %q of the message's %q, sent before: %v", one.URL, one.Slot, one.Group, fm.Split()[0].Group, seen[one.URL])
			}
			seen[one.URL] = true
			u, _ := url.Parse(one.URL)
			hosts[u.Host]++
			paths = append(paths, u.Host+u.Path)
		}
		if len(hosts) > 1 && len(paths) != len(hosts) {
			t.Errorf("a message of several hosts holds one host twice: %v", paths)
		}
		slices.Sort(paths)
		got = append(got, fmt.Sprint(len(paths), " ", paths[0]))
	}
	slices.Sort(got)
	// h0..h9 in one message, h10, h11, h0/b (h0 is in the first already) and new.test in another,
	// big.test's four URLs in one run (its fourth joined the run open in the batch).
	want := []string{"10 h0.test/a", "4 big.test/1", "4 h0.test/b"}
	if !slices.Equal(got, want) || len(seen) != 18 {
		t.Errorf("messages (URLs, first path) %v, %d URLs; want %v, 18", got, len(seen), want)
	}
	if n := writes.Writes(); n != 0 {
		t.Errorf("%d slot writes, want none: the fetchers book them", n)
	}
}
