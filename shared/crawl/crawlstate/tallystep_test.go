package crawlstate

import (
	"context"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/local/sqlite"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// putShape writes a crawlShape's items into tb, and the crawl's item (which holds a saved tally's
// head); it returns how many items of the crawl's partitions it wrote.
func putShape(t *testing.T, s *Store, shape crawlShape) int {
	t.Helper()
	ctx := context.Background()
	if err := s.MarkStarted(ctx, shape.crawl); err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := shape.items("", func(k table.Key, it table.Item) error {
		n++
		return s.t.Put(ctx, k, it, table.Cond{})
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// stepsUntilDone runs DrainedStep with basis until the tally completes, and returns the steps.
func stepsUntilDone(t *testing.T, s *Store, crawl string, basis int64, most int) []TallyStep {
	t.Helper()
	var steps []TallyStep
	for len(steps) < most {
		st, err := s.DrainedStep(context.Background(), crawl, basis, time.Hour)
		if err != nil {
			t.Fatalf("step %d: %v", len(steps)+1, err)
		}
		steps = append(steps, st)
		if st.Done {
			return steps
		}
	}
	t.Fatalf("the tally did not complete in %d steps", most)
	return nil
}

// savedItems lists the sort keys of the saved tallies' chunks in the crawl's partitions.
func savedItems(t *testing.T, tb table.Table, crawl string) []string {
	t.Helper()
	var keys []string
	if err := EachInCrawl(context.Background(), tb, crawl, tallyKind, func(sort string, _ table.Item) error {
		keys = append(keys, sort)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return keys
}

// A tally in steps of any size, split mid-partition at every item with steps of one, gives the
// counters and the work left of the tally in one go (and of the shape the items were made as),
// reads every item once, and leaves no saved tally behind.
func testTallyInStepsIsTheTallyInOneGo(t *testing.T, tb table.Table) {
	ctx := context.Background()
	shape := crawlShape{crawl: crawlName(t), urls: 130}
	items := putShape(t, New(tb), shape)
	want, wantLeft, err := New(tb).Drained(ctx, shape.crawl)
	if err != nil {
		t.Fatal(err)
	}
	if want.Seen != 130 || want.Fetched != 104 || want.Skipped != 13 || want.Failed != 13 || wantLeft.Queued != 0 ||
		wantLeft.Unparsed != 8 || wantLeft.Links != 28 {
		t.Fatalf("the tally in one go: %+v, left %+v; want the shape's 130 seen, 104 fetched, 13 skipped, 13 failed, "+
			"none queued, the last file's 8 pages unparsed, the 28 Links messages of the last file parsed", want, wantLeft)
	}
	for _, per := range []int{1, 2, 7, 50} {
		t.Run(fmt.Sprintf("items=%d", per), func(t *testing.T) {
			s := New(tb, WithTallyStepItems(per))
			steps := stepsUntilDone(t, s, shape.crawl, 42, items+2)
			last := steps[len(steps)-1]
			read := int64(0)
			for i, st := range steps {
				read += st.Read
				if st.Steps != i+1 || st.Dropped != "" || st.Read > int64(per) || (!st.Done && st.Read == 0) {
					t.Errorf("step %d: %+v; want step %d of the tally, up to %d items read, at least one unless the last", i+1, st, i+1, per)
				}
				if !st.Done && st.Saved == 0 {
					t.Errorf("step %d saved nothing", i+1)
				}
			}
			if read != int64(items) {
				t.Errorf("the steps read %d items, want the crawl's %d, each once", read, items)
			}
			if per == 1 && len(steps) < items {
				t.Errorf("%d steps of one item for %d items", len(steps), items)
			}
			last.Counters.GaveUp, want.GaveUp = nil, nil
			if !reflect.DeepEqual(last.Counters, want) || last.Left != wantLeft {
				t.Errorf("the tally in steps of %d: %+v, left %+v; want %+v, left %+v", per, last.Counters, last.Left, want, wantLeft)
			}
			if keys := savedItems(t, tb, shape.crawl); len(keys) != 0 {
				t.Errorf("saved tallies left behind: %q", keys)
			}
			if ch, err := s.ChecksOf(ctx, shape.crawl); err != nil || ch.Tallying {
				t.Errorf("ChecksOf after the tally: Tallying %v, %v; want none", ch.Tallying, err)
			}
		})
	}
}

// A step given another basis than the saved tally's (the crawl's counters moved) drops it and
// reads the crawl again from its first item.
func testATallyWhoseBasisMovedStartsAgain(t *testing.T, tb table.Table) {
	ctx := context.Background()
	shape := crawlShape{crawl: crawlName(t), urls: 60}
	items := putShape(t, New(tb), shape)
	want, wantLeft, err := New(tb).Drained(ctx, shape.crawl)
	if err != nil {
		t.Fatal(err)
	}
	s := New(tb, WithTallyStepItems(20))
	for i := range 2 {
		if st, err := s.DrainedStep(ctx, shape.crawl, 1, time.Hour); err != nil || st.Done || st.Read != 20 {
			t.Fatalf("step %d: %+v, %v; want 20 items read and more to go", i+1, st, err)
		}
	}
	if ch, err := s.ChecksOf(ctx, shape.crawl); err != nil || !ch.Tallying {
		t.Fatalf("ChecksOf between steps: Tallying %v, %v; want a saved tally", ch.Tallying, err)
	}
	steps := stepsUntilDone(t, s, shape.crawl, 2, items)
	read := int64(0)
	for _, st := range steps {
		read += st.Read
	}
	if steps[0].Dropped == "" || steps[0].Steps != 1 || read != int64(items) {
		t.Errorf("after the basis moved: first step %+v, %d items read in %d steps; want it dropped, step 1, all %d items read again",
			steps[0], read, len(steps), items)
	}
	last := steps[len(steps)-1]
	if last.Counters.Seen != want.Seen || last.Counters.Fetched != want.Fetched || last.Left != wantLeft {
		t.Errorf("the tally started again: %+v, left %+v; want %+v, left %+v", last.Counters, last.Left, want, wantLeft)
	}
	// DropTally, as a check of a paused crawl calls it, deletes a saved tally.
	if st, err := s.DrainedStep(ctx, shape.crawl, 3, time.Hour); err != nil || st.Done {
		t.Fatalf("a first step: %+v, %v", st, err)
	}
	if err := s.DropTally(ctx, shape.crawl); err != nil {
		t.Fatal(err)
	}
	if keys := savedItems(t, tb, shape.crawl); len(keys) != 0 {
		t.Errorf("DropTally left %q", keys)
	}
	if st, err := s.DrainedStep(ctx, shape.crawl, 3, time.Hour); err != nil || st.Steps != 1 || st.Dropped != "" {
		t.Errorf("the step after DropTally: %+v, %v; want a first step, nothing to drop", st, err)
	}
}

// A saved tally that cannot be read (a chunk changed, or gone) is dropped with the reason, and the
// tally starts again and completes as the tally in one go.
func testAnUnreadableTallyStartsAgain(t *testing.T, tb table.Table) {
	ctx := context.Background()
	shape := crawlShape{crawl: crawlName(t), urls: 60}
	items := putShape(t, New(tb), shape)
	want, wantLeft, err := New(tb).Drained(ctx, shape.crawl)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		spoil func(key table.Key, it table.Item) error
		why   string
	}{
		{"changed", func(key table.Key, it table.Item) error {
			b, _ := base64.StdEncoding.DecodeString(it.String(attrChunk))
			b[len(b)/2] ^= 1
			return tb.Put(ctx, key, table.Item{attrChunk: base64.StdEncoding.EncodeToString(b)}, table.Cond{})
		}, "digest"},
		{"not base64", func(key table.Key, it table.Item) error {
			return tb.Put(ctx, key, table.Item{attrChunk: "%%%"}, table.Cond{})
		}, "chunk 0"},
		{"gone", func(key table.Key, _ table.Item) error { return tb.Delete(ctx, key, table.Cond{}) }, "missing"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := New(tb, WithTallyStepItems(25))
			if st, err := s.DrainedStep(ctx, shape.crawl, 7, time.Hour); err != nil || st.Done {
				t.Fatalf("a first step: %+v, %v", st, err)
			}
			it, err := tb.Get(ctx, CrawlKey(shape.crawl))
			if err != nil {
				t.Fatal(err)
			}
			key := chunkKey(shape.crawl, it.String(attrTallyGen), 0)
			chunk, err := tb.Get(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if err := tt.spoil(key, chunk); err != nil {
				t.Fatal(err)
			}
			steps := stepsUntilDone(t, s, shape.crawl, 7, items)
			read := int64(0)
			for _, st := range steps {
				read += st.Read
			}
			if !strings.Contains(steps[0].Dropped, tt.why) || read != int64(items) {
				t.Errorf("the step after the chunk was %s: dropped %q, %d items read in all; want a reason naming %q, all %d read again",
					tt.name, steps[0].Dropped, read, tt.why, items)
			}
			last := steps[len(steps)-1]
			if last.Counters.Seen != want.Seen || last.Counters.Failed != want.Failed || last.Left != wantLeft {
				t.Errorf("the tally started again: %+v, left %+v; want %+v, left %+v", last.Counters, last.Left, want, wantLeft)
			}
		})
	}
}

// A state larger than a chunk is saved in several, and read back whole.
func testALargeTallyIsSavedInChunks(t *testing.T, tb table.Table) {
	ctx := context.Background()
	crawl := crawlName(t)
	s := New(tb)
	if err := s.MarkStarted(ctx, crawl); err != nil {
		t.Fatal(err)
	}
	tl := randomTallier(crawl, 80_000)
	var cur cursors
	cur[3] = cursor{After: "u#abc"}
	cur[9].Done = true
	n, err := s.saveTally(ctx, crawl, 5, savedTally{}, tl, &cur, 4)
	if err != nil {
		t.Fatal(err)
	}
	if n <= 2*tallyChunkBytes {
		t.Fatalf("saved %d bytes, want more than two chunks' %d", n, 2*tallyChunkBytes)
	}
	if keys := savedItems(t, tb, crawl); len(keys) != (n+tallyChunkBytes-1)/tallyChunkBytes {
		t.Errorf("saved %d bytes in %d items, want %d", n, len(keys), (n+tallyChunkBytes-1)/tallyChunkBytes)
	}
	got, gotCur, _, step, err := s.loadTally(ctx, crawl, 5)
	if err != nil || step.Dropped != "" || step.Steps != 4 {
		t.Fatalf("loadTally: %+v, %v", step, err)
	}
	checkSameTally(t, got, tl)
	if *gotCur != cur {
		t.Errorf("cursors read back %v, want %v", gotCur, cur)
	}
}

// randomTallier is a tally under way with n random names of each kind, marks and pages.
func randomTallier(crawl string, n int) *tallier {
	r := rand.New(rand.NewPCG(1, 2))
	t := newTallier(crawl, true)
	t.resumable()
	t.c.Seen, t.c.Fetched, t.c.Skipped, t.c.Failed, t.c.StoppedURLs = 1000, 700, 100, 150, 50
	t.c.Classes[errclass.HTTP5xx], t.c.Classes[errclass.Robots] = 150, 100
	t.outcomes, t.queued = 990, 1000
	for range n {
		t.named = append(t.named, r.Uint64())
		t.admitted = append(t.admitted, r.Uint64())
	}
	t.named = append(t.named, t.named[:10]...) // repeats
	for range n / 10 {
		t.marks[r.Uint64()] = true
	}
	for range n / 20 {
		m := r.Uint64()
		for range 1 + r.IntN(5) {
			t.pages[m] = append(t.pages[m], r.Uint64())
		}
		t.pages[m] = append(t.pages[m], t.pages[m][0]) // a page counted twice counts twice
	}
	return t
}

// checkSameTally fails t unless got holds what want does (its sets as sets; its pages as lists).
func checkSameTally(t *testing.T, got, want *tallier) {
	t.Helper()
	if !reflect.DeepEqual(got.c, want.c) || got.outcomes != want.outcomes || got.queued != want.queued {
		t.Errorf("counts read back %+v %d %d, want %+v %d %d", got.c, got.outcomes, got.queued, want.c, want.outcomes, want.queued)
	}
	if !reflect.DeepEqual(got.marks, want.marks) {
		t.Errorf("%d marks read back, want %d", len(got.marks), len(want.marks))
	}
	if !slices.Equal(sortedSet(got.named), sortedSet(slices.Clone(want.named))) ||
		!slices.Equal(sortedSet(got.admitted), sortedSet(slices.Clone(want.admitted))) {
		t.Errorf("names read back: %d named, %d admitted; want %d, %d", len(got.named), len(got.admitted), len(want.named), len(want.admitted))
	}
	if len(got.pages) != len(want.pages) {
		t.Errorf("%d messages' pages read back, want %d", len(got.pages), len(want.pages))
	}
	for m, ps := range want.pages {
		g, w := slices.Clone(got.pages[m]), slices.Clone(ps)
		slices.Sort(g)
		slices.Sort(w)
		if !slices.Equal(g, w) {
			t.Errorf("pages of %x read back %x, want %x", m, g, w)
		}
	}
}

// The saved state reads back what was saved, but the pages a mark accounts for; a state cut short
// or changed anywhere is an error, never a panic.
func TestTallyStateRoundTrips(t *testing.T) {
	tl := randomTallier("c", 2000)
	var cur cursors
	cur[0], cur[63] = cursor{After: "r#grp-0000012"}, cursor{Done: true}
	// A page whose message is marked, and one whose own one-page message is: neither is saved.
	var mark uint64
	for m := range tl.marks {
		mark = m
		break
	}
	tl.pages[mark] = []uint64{1, 2}
	tl.pages[99] = []uint64{mark}
	b, err := encodeTally(tl, &cur)
	if err != nil {
		t.Fatal(err)
	}
	got, gotCur := newTallier("c", true), &cursors{}
	got.resumable()
	if err := decodeTally(b, got, gotCur); err != nil {
		t.Fatal(err)
	}
	delete(tl.pages, mark)
	delete(tl.pages, 99)
	checkSameTally(t, got, tl)
	if *gotCur != cur {
		t.Errorf("cursors read back %v, want %v", gotCur, cur)
	}
	for n := range len(b) {
		short := newTallier("c", true)
		short.resumable()
		if err := decodeTally(b[:n], short, &cursors{}); err == nil {
			t.Fatalf("a state cut to %d of its %d bytes read without an error", n, len(b))
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		bad := slices.Clone(b)
		bad[r.IntN(len(bad))] = byte(r.Uint32())
		x := newTallier("c", true)
		x.resumable()
		_ = decodeTally(bad, x, &cursors{}) // no panic, no runaway allocation
	}
}

// The tests of the resumable tally on the embedded table; tables_test.go runs them on DynamoDB too.
func TestTallyInStepsOnSQLite(t *testing.T) {
	for _, tt := range tallyStepTests {
		t.Run(tt.name, func(t *testing.T) {
			db, err := sqlite.Open(filepath.Join(t.TempDir(), "s.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			tt.fn(t, db.Table("t"))
		})
	}
}

var tallyStepTests = []struct {
	name string
	fn   func(t *testing.T, tb table.Table)
}{
	{"TallyInStepsIsTheTallyInOneGo", testTallyInStepsIsTheTallyInOneGo},
	{"ATallyWhoseBasisMovedStartsAgain", testATallyWhoseBasisMovedStartsAgain},
	{"AnUnreadableTallyStartsAgain", testAnUnreadableTallyStartsAgain},
	{"ALargeTallyIsSavedInChunks", testALargeTallyIsSavedInChunks},
}

// stuckPages is a table whose reads of one partition wait for their context while stuck is set:
// a page that a slow table takes longer than a step's budget to serve.
type stuckPages struct {
	table.Table
	part  string
	stuck atomic.Bool
}

func (s *stuckPages) QueryAfter(ctx context.Context, part, prefix, after string, fn func(string, table.Item) error) error {
	if part == s.part && s.stuck.Load() {
		<-ctx.Done()
		return ctx.Err()
	}
	return s.Table.QueryAfter(ctx, part, prefix, after, fn)
}

// A step whose budget passes while a partition's page is still on its way cancels that read and
// saves what it counted, within its budget however long the page would take; the steps after it
// complete the tally as the tally in one go.
func TestAStepDoesNotWaitForAPageOnceItsBudgetIsSpent(t *testing.T) {
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	shape := crawlShape{crawl: "stuck", urls: 200}
	items := putShape(t, New(db.Table("t")), shape)
	want, wantLeft, err := New(db.Table("t")).Drained(context.Background(), shape.crawl)
	if err != nil {
		t.Fatal(err)
	}
	tb := &stuckPages{Table: db.Table("t"), part: crawlPart(shape.crawl, 0)}
	tb.stuck.Store(true)
	s := New(tb)
	type result struct {
		st  TallyStep
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := s.DrainedStep(context.Background(), shape.crawl, 1, 100*time.Millisecond)
		done <- result{st, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("a step of 100 ms still waits for a stuck page after 30 s")
	}
	if r.err != nil || r.st.Done || r.st.Read == 0 || r.st.Saved == 0 {
		t.Fatalf("the step with a stuck page: %+v, %v; want items read and saved, the tally not done", r.st, r.err)
	}
	tb.stuck.Store(false)
	steps := stepsUntilDone(t, s, shape.crawl, 1, 10)
	read := r.st.Read
	for _, st := range steps {
		read += st.Read
	}
	last := steps[len(steps)-1]
	last.Counters.GaveUp, want.GaveUp = nil, nil
	if read != int64(items) || !reflect.DeepEqual(last.Counters, want) || last.Left != wantLeft {
		t.Errorf("after the stuck page: %d items read, %+v, left %+v; want %d, %+v, left %+v", read, last.Counters, last.Left, items, want, wantLeft)
	}
}
