package finish_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/finish"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/port/queue"
	"github.com/crawlstack/crawlstack/shared/port/table"
	"github.com/crawlstack/crawlstack/shared/port/table/tabletest"
)

// tallies is the crawl state that counts its exact tallies (DrainedStep that completed) and their
// steps, and can show counters other than the store's (drift).
type tallies struct {
	*crawlstate.Store
	n, steps atomic.Int64
	// dropped counts the steps that dropped a saved tally; first is the number (of steps) of the
	// last step that was the first of its tally.
	dropped, first atomic.Int64
	drift          func(crawlstate.Counters) crawlstate.Counters
}

func (t *tallies) DrainedStep(ctx context.Context, crawl string, basis int64, budget time.Duration) (crawlstate.TallyStep, error) {
	st, err := t.Store.DrainedStep(ctx, crawl, basis, budget)
	n := t.steps.Add(1)
	if st.Done {
		t.n.Add(1)
	}
	if st.Dropped != "" {
		t.dropped.Add(1)
	}
	if st.Steps == 1 {
		t.first.Store(n)
	}
	return st, err
}

func (t *tallies) Counters(ctx context.Context, crawl string) (crawlstate.Counters, error) {
	c, err := t.Store.Counters(ctx, crawl)
	if err == nil && t.drift != nil {
		c = t.drift(c)
	}
	return c, err
}

// counted is a fixture whose checks go through a tallies.
func counted(t *testing.T) (*fixture, *tallies) {
	t.Helper()
	f := newFixture(t, 10*time.Minute)
	tl := &tallies{Store: f.st}
	f.c.State = tl
	return f, tl
}

// admitOne admits one URL to the crawl, and returns its key.
func (f *fixture) admitOne(t *testing.T, u string) string {
	t.Helper()
	if _, err := f.st.Admit(context.Background(), crawl, u, u, "", 0, "links-1"); err != nil {
		t.Fatal(err)
	}
	return u
}

// skipURL ends the admitted URL key skipped.
func (f *fixture) skipURL(t *testing.T, key string) {
	t.Helper()
	ctx := context.Background()
	u, err := f.st.Claim(ctx, crawl, key, "owner", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.Record(ctx, crawl, crawlstate.GroupOf(u), []crawlstate.Outcome{
		{Key: key, State: crawlstate.Skipped, Prev: crawlstate.Queued, Cause: errclass.Errorf(errclass.Robots, "disallowed"), Owner: "owner"},
	}); err != nil {
		t.Fatal(err)
	}
}

// next delivers the last check sent, once its delay has passed, as message id; it reports false
// when the chain sent no check since the last call (it stopped).
func (f *fixture) next(t *testing.T, id string, last *int) bool {
	t.Helper()
	f.send.mu.Lock()
	n := len(f.send.checks)
	if n == *last {
		f.send.mu.Unlock()
		return false
	}
	m, d := f.send.checks[n-1], f.send.delays[n-1]
	f.send.mu.Unlock()
	*last = n
	f.now = f.now.Add(d)
	if err := f.c.Check(context.Background(), m, id); err != nil {
		t.Fatalf("check %d (%s): %v", m.Seq, id, err)
	}
	return true
}

// begin sends the crawl's first check, and returns the count of checks sent.
func (f *fixture) begin(t *testing.T) int {
	t.Helper()
	if err := f.c.Begin(context.Background(), crawl); err != nil {
		t.Fatal(err)
	}
	return 0
}

// TestTheCheckReadsOnlyCountersWhileWorkIsLeft: while the end's counters show a URL left, the
// checks tally at most once a quiet time, however long the URL takes (under StallAfter: counters
// that drifted high must not hold the end for ever), and announce nothing; once it ends, the next
// check tallies once, agrees, and announces the end once.
func TestTheCheckReadsOnlyCountersWhileWorkIsLeft(t *testing.T) {
	f, tl := counted(t)
	key := f.admitOne(t, "http://a.test/")
	last := f.begin(t)
	for i := range 50 { // 50 minutes, five quiet times
		f.next(t, "m"+string(rune('a'+i)), &last)
	}
	before := tl.n.Load()
	if most := int64(50 * time.Minute / f.c.Quiet); before > most || len(f.pub.ev) != 0 {
		t.Fatalf("%d tallies and events %+v in 50 minutes while the counters show a URL queued; want at most %d (one a quiet time) and none",
			before, f.pub.ev, most)
	}
	f.skipURL(t, key)
	if !f.next(t, "after", &last) {
		t.Fatal("the chain stopped before the URL ended")
	}
	if n := tl.n.Load() - before; n != 1 || len(f.pub.ev) != 1 || f.pub.ev[0].End != finish.EndDrained || f.pub.ev[0].Counts.Skipped != 1 {
		t.Fatalf("%d tallies, events %+v; want one tally and the end announced with the URL skipped", n, f.pub.ev)
	}
	if f.next(t, "after the end", &last) {
		t.Error("the chain sent a check after the end")
	}
	// The check that ended it, delivered again, and a copy under another id: nothing more.
	m := &message.Check{Header: message.Header{Crawl: crawl}, Seq: f.send.checks[len(f.send.checks)-1].Seq}
	for _, id := range []string{"after", "copy"} {
		if err := f.c.Check(context.Background(), m, id); err != nil {
			t.Fatal(err)
		}
	}
	if n := tl.n.Load() - before; len(f.pub.ev) != 1 || n != 1 {
		t.Errorf("events %d, tallies %d since the URL ended after duplicate deliveries; want 1 and 1", len(f.pub.ev), n)
	}
}

// TestATallyThatDisagreesIsNotRepeatedUntilTheCountersMove: counters that drifted show nothing left
// while a URL is queued. The check tallies, logs, goes on; it tallies again only after another
// Quiet, or once the counters move.
func TestATallyThatDisagreesIsNotRepeatedUntilTheCountersMove(t *testing.T) {
	f, tl := counted(t)
	f.admitOne(t, "http://a.test/")
	tl.drift = func(crawlstate.Counters) crawlstate.Counters { return crawlstate.Counters{} }
	f.c.StallAfter = 100 * time.Hour
	last := f.begin(t)
	f.next(t, "m0", &last)
	if tl.n.Load() != 1 || len(f.pub.ev) != 0 {
		t.Fatalf("%d tallies, events %+v; want one tally, which finds the URL, and no end", tl.n.Load(), f.pub.ev)
	}
	for _, id := range []string{"m1", "m2", "m3"} { // three minutes: under a Quiet
		f.next(t, id, &last)
	}
	if tl.n.Load() != 1 {
		t.Fatalf("%d tallies within a quiet time of unchanged counters; want 1", tl.n.Load())
	}
	// The counters move (a URL admitted and ended), still showing nothing left.
	tl.drift = func(crawlstate.Counters) crawlstate.Counters { return crawlstate.Counters{Seen: 1, Fetched: 1} }
	f.next(t, "m4", &last)
	if tl.n.Load() != 2 {
		t.Fatalf("%d tallies after the counters moved; want 2", tl.n.Load())
	}
	for i := range 10 {
		f.next(t, "q"+string(rune('a'+i)), &last)
	}
	if tl.n.Load() != 3 || len(f.pub.ev) != 0 {
		t.Fatalf("%d tallies after another quiet time, events %+v; want 3 and no end", tl.n.Load(), f.pub.ev)
	}
}

// TestAStalledCrawlIsAnnouncedOnceAndItsChecksStop: a URL that never ends keeps the counters still
// with work left. After StallAfter the crawl is announced stalled, once, naming what is stuck; its
// chain sends no further check, and duplicate deliveries of the stalling check (one failed to put
// the event) announce it once. crawl resume takes the chain on, and the crawl ends once its URL
// does.
func TestAStalledCrawlIsAnnouncedOnceAndItsChecksStop(t *testing.T) {
	f, tl := counted(t)
	f.c.StallAfter = 30 * time.Minute
	key := f.admitOne(t, "http://a.test/")
	last := f.begin(t)
	f.pub.fail = 1 // the stalling check's first put fails: it comes again
	stallingID := ""
	for i := 0; ; i++ {
		id := "m" + string(rune('a'+i))
		f.send.mu.Lock()
		n := len(f.send.checks)
		f.send.mu.Unlock()
		if n == last {
			break
		}
		m, d := f.send.checks[n-1], f.send.delays[n-1]
		last = n
		f.now = f.now.Add(d)
		if err := f.c.Check(context.Background(), m, id); err != nil {
			stallingID = id
			if err := f.c.Check(context.Background(), m, id); err != nil { // its redelivery
				t.Fatalf("the stalling check delivered again: %v", err)
			}
		}
		if i > 100 {
			t.Fatal("the chain of checks never stopped")
		}
	}
	if stallingID == "" || len(f.pub.ev) != 1 {
		t.Fatalf("stalled by %q, events %+v; want the stall announced once, by a check whose first put failed", stallingID, f.pub.ev)
	}
	ev := f.pub.ev[0]
	if ev.End != finish.EndStalled || ev.DetailTypeOf() != finish.DetailTypeStalled || ev.Stuck == nil ||
		ev.Stuck.QueuedURLs != 1 || ev.Stuck.UnparsedPages != 0 || ev.Stuck.UnadmittedLinks != 0 ||
		len(ev.Stuck.DeadLetterQueues) != 1 || ev.Stuck.DeadLetterQueues[0] != "fetch" {
		t.Fatalf("the stall's event %+v (stuck %+v); want one URL queued, the fetch DLQ named", ev, ev.Stuck)
	}
	if got := f.now.Sub(ev.Stuck.QuietSince); got < 30*time.Minute || got > 32*time.Minute {
		t.Errorf("stalled %v after its counters went still; want about StallAfter", got)
	}
	if n, most := tl.n.Load(), int64(f.c.StallAfter/f.c.Quiet)+1; n < 1 || n > most {
		t.Errorf("%d tallies; want one a quiet time, the last to confirm the stall: at most %d", n, most)
	}
	ch, err := f.st.ChecksOf(context.Background(), crawl)
	if err != nil || ch.Stall != crawlstate.StallAnnounced || ch.End != "" {
		t.Fatalf("ChecksOf = stall %q, end %q, %v; want the stall announced and no end", ch.Stall, ch.End, err)
	}
	// Copies of the stalling check, under its id and another: no event, no check.
	sent := len(f.send.checks)
	stalling := f.send.checks[sent-1]
	for _, id := range []string{stallingID, "copy"} {
		if err := f.c.Check(context.Background(), stalling, id); err != nil {
			t.Fatal(err)
		}
	}
	if len(f.pub.ev) != 1 || len(f.send.checks) != sent {
		t.Fatalf("copies of the stalling check put %d events and sent %d checks; want none", len(f.pub.ev)-1, len(f.send.checks)-sent)
	}
	// The URL's work is moved back and ends; crawl resume takes the chain on.
	f.skipURL(t, key)
	if ok, err := f.c.Resume(context.Background(), crawl); err != nil || !ok {
		t.Fatalf("Resume = %v, %v; want a check sent", ok, err)
	}
	if got := f.send.checks[len(f.send.checks)-1]; got.Seq != ch.Seq {
		t.Fatalf("Resume sent check %d; want %d, the chain's next", got.Seq, ch.Seq)
	}
	f.next(t, "resumed", &last)
	if len(f.pub.ev) != 2 || f.pub.ev[1].End != finish.EndDrained {
		t.Fatalf("events %+v; want the stall, then the end", f.pub.ev)
	}
	if ch, _ = f.st.ChecksOf(context.Background(), crawl); ch.Stall != "" || ch.End != crawlstate.EndAnnounced {
		t.Errorf("ChecksOf = stall %q, end %q; want the stall cleared and the end announced", ch.Stall, ch.End)
	}
}

// TestASeedFileReadAgainRevivesAStalledCrawl: Begin (a seed file of the crawl read again) sends a
// stalled crawl a check at its chain's seq, which takes the chain on; for a crawl that is not
// stalled it sends check 0, which a chain that has moved on drops.
func TestASeedFileReadAgainRevivesAStalledCrawl(t *testing.T) {
	f, _ := counted(t)
	ctx := context.Background()
	f.admitOne(t, "http://a.test/")
	ch, err := f.st.StepCheck(ctx, crawl, crawlstate.Step{Seq: 0, By: "m0", Stall: `{"end":"stalled"}`})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.c.Begin(ctx, crawl); err != nil {
		t.Fatal(err)
	}
	if got := f.checksSent(); len(got) != 1 || got[0] != ch.Seq {
		t.Fatalf("Begin of a stalled crawl sent checks %v; want check %d, the chain's next", got, ch.Seq)
	}
	last := 0
	f.next(t, "revived", &last)
	if ch, err = f.st.ChecksOf(ctx, crawl); err != nil || ch.Stall != "" || len(f.checksSent()) != 2 {
		t.Fatalf("after the revived check: stall %q (%v), checks sent %v; want the stall cleared and the chain going on", ch.Stall, err, f.checksSent())
	}
	if err := f.c.Begin(ctx, crawl); err != nil {
		t.Fatal(err)
	}
	if got := f.checksSent(); got[len(got)-1] != 0 {
		t.Errorf("Begin of a running crawl sent check %d; want 0", got[len(got)-1])
	}
}

// TestAPausedCrawlsChecksBackOff: each check of a paused crawl waits twice as long as the one
// before, up to queue.MaxDelay; crawl resume sends a check at the normal pace, and the chain goes
// on at it.
func TestAPausedCrawlsChecksBackOff(t *testing.T) {
	f, tl := counted(t)
	f.admitOne(t, "http://a.test/")
	ctx := context.Background()
	if err := f.st.SetRun(ctx, crawl, crawlstate.Paused); err != nil {
		t.Fatal(err)
	}
	last := f.begin(t)
	for i := range 7 {
		f.next(t, "p"+string(rune('a'+i)), &last)
	}
	want := []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, queue.MaxDelay, queue.MaxDelay, queue.MaxDelay, queue.MaxDelay}
	if got := f.send.delays; len(got) != len(want) || !equalDurations(got, want) {
		t.Fatalf("a paused crawl's checks waited %v; want %v", got, want)
	}
	if tl.n.Load() != 0 || len(f.pub.ev) != 0 {
		t.Fatalf("a paused crawl was tallied %d times, events %+v; want neither (nor a stall, after %v)", tl.n.Load(), f.pub.ev, f.now.Sub(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)))
	}
	if err := f.st.SetRun(ctx, crawl, crawlstate.Running); err != nil {
		t.Fatal(err)
	}
	if ok, err := f.c.Resume(ctx, crawl); err != nil || !ok {
		t.Fatalf("Resume = %v, %v", ok, err)
	}
	f.next(t, "resumed", &last)
	f.next(t, "after", &last)
	n := len(f.send.delays)
	if got := f.send.delays[n-3:]; !equalDurations(got, []time.Duration{time.Minute, time.Minute, time.Minute}) {
		t.Errorf("after the resume the checks waited %v; want a minute each", got)
	}
	// The paused chain's own check comes late, a copy of a check the resumed chain passed.
	before := len(f.send.checks)
	if err := f.c.Check(ctx, f.send.checks[len(want)-1], "late"); err != nil {
		t.Fatal(err)
	}
	if len(f.send.checks) != before {
		t.Error("the paused chain's late check sent another: two chains")
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestTheEndedCrawlsItemsExpire: the end gives the crawl item and its counter shards an expiresAt
// of the end plus the crawl's retention.
func TestTheEndedCrawlsItemsExpire(t *testing.T) {
	f, _ := counted(t)
	ctx := context.Background()
	f.skipURL(t, f.admitOne(t, "http://a.test/"))
	last := f.begin(t)
	f.next(t, "m0", &last)
	if len(f.pub.ev) != 1 {
		t.Fatalf("events %+v; want the end", f.pub.ev)
	}
	want := f.now.Add(crawlstate.DefaultRetention).Unix()
	it, err := f.scans.Get(ctx, crawlstate.CrawlKey(crawl))
	if err != nil || it.Int(table.TTLAttr) != want {
		t.Errorf("the crawl item's %s = %d (%v); want %d, the end plus the retention", table.TTLAttr, it.Int(table.TTLAttr), err, want)
	}
	shards := 0
	for n := range crawlstate.CounterShards {
		sh, err := f.scans.Get(ctx, crawlstate.ShardKey(crawl, n))
		if err != nil {
			continue
		}
		shards++
		if sh.Int(table.TTLAttr) != want {
			t.Errorf("shard %d's %s = %d; want %d", n, table.TTLAttr, sh.Int(table.TTLAttr), want)
		}
	}
	if shards == 0 {
		t.Error("no counter shard: the test counts nothing")
	}
}

// TestCountersThatDriftedLowStillStall: counters that show nothing left while a URL never ends are
// tallied once a quiet time, and the crawl is announced stalled, with the tally's numbers, once they
// have stood still for StallAfter: a stuck crawl never tallies every Quiet forever.
func TestCountersThatDriftedLowStillStall(t *testing.T) {
	f, tl := counted(t)
	f.c.StallAfter = 30 * time.Minute
	tl.drift = func(crawlstate.Counters) crawlstate.Counters { return crawlstate.Counters{} }
	f.admitOne(t, "http://a.test/")
	last := f.begin(t)
	for i := 0; f.next(t, "m"+string(rune('a'+i)), &last); i++ {
		if i > 100 {
			t.Fatal("the chain of checks never stopped")
		}
	}
	if len(f.pub.ev) != 1 || f.pub.ev[0].End != finish.EndStalled || f.pub.ev[0].Stuck.QueuedURLs != 1 || !f.pub.ev[0].Stuck.Exact {
		t.Fatalf("events %+v; want the stall, once, with the tally's URL queued", f.pub.ev)
	}
	if n, most := tl.n.Load(), int64(30*time.Minute/f.c.Quiet)+1; n < 2 || n > most {
		t.Errorf("%d tallies over the %v before the stall; want one a quiet time, at most %d", n, f.c.StallAfter, most)
	}
}

// TestAReplayedStallIsAnnounced: the stalling check's step is applied and its answer lost, and the
// SDK sends it again: the check still announces the stall, once, and its chain stops.
func TestAReplayedStallIsAnnounced(t *testing.T) {
	f, _ := counted(t)
	faults := tabletest.NewFaults(f.scans)
	f.st = crawlstate.New(faults, crawlstate.WithClock(func() time.Time { return f.now }), crawlstate.WithRunCheck(-1))
	f.c.State, f.c.StallAfter = f.st, 30*time.Minute
	f.admitOne(t, "http://a.test/")
	last := f.begin(t)
	firstCheck := f.now.Add(time.Minute)
	for i := 0; ; i++ {
		if f.now.Add(time.Minute).Sub(firstCheck) >= f.c.StallAfter && len(faults.Injected()) == 0 {
			faults.Add(tabletest.Rule{Op: "update", Key: crawlstate.CrawlKey(crawl), Nth: 1}) // the stalling step
		}
		if !f.next(t, "m"+string(rune('a'+i)), &last) {
			break
		}
		if i > 100 {
			t.Fatal("the chain of checks never stopped")
		}
	}
	if len(faults.Injected()) != 1 {
		t.Fatalf("faults injected %v, want the stalling step replayed", faults.Injected())
	}
	if len(f.pub.ev) != 1 || f.pub.ev[0].End != finish.EndStalled {
		t.Fatalf("events %+v; want the stall announced once", f.pub.ev)
	}
	if ch, err := f.st.ChecksOf(context.Background(), crawl); err != nil || ch.Stall != crawlstate.StallAnnounced {
		t.Errorf("the stall is %q (%v); want announced", ch.Stall, err)
	}
}

// TestCountersThatDriftedHighHoldTheEndAQuietTimeAtMost: the deployed stack's counters once named
// a Links message that was never counted admitted, its crawl done. With counters that show work
// left for ever, the end still comes a quiet time after they stood still: the tally decides it.
func TestCountersThatDriftedHighHoldTheEndTwoQuietTimesAtMost(t *testing.T) {
	f, tl := counted(t)
	tl.drift = func(c crawlstate.Counters) crawlstate.Counters { c.LinksNamed++; return c }
	last := f.begin(t)
	for i := 0; len(f.pub.ev) == 0; i++ {
		if i > 30 || !f.next(t, fmt.Sprintf("m%d", i), &last) {
			t.Fatalf("no end after %d checks a minute apart", i)
		}
	}
	ev := f.pub.ev[0]
	if ev.End != finish.EndDrained {
		t.Fatalf("the crawl ended %q, want drained", ev.End)
	}
	// One tally after a quiet time finds it drained, a second a quiet time later confirms it.
	if took := f.now.Sub(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)); took < 2*f.c.Quiet || took > 2*f.c.Quiet+2*time.Minute {
		t.Errorf("the end came %v after the start, want about twice the quiet time (%v)", took, f.c.Quiet)
	}
}

// A tally is no snapshot: one that finds the crawl drained while its counters show work left (an
// admission read half, its admitted mark and not its URL items) decides nothing; the admission's
// counters then move, and a URL left queued keeps the crawl from a drained end.
func TestATallyThatDisagreesWithTheCountersIsConfirmedBeforeTheEnd(t *testing.T) {
	f, tl := counted(t)
	tl.drift = func(c crawlstate.Counters) crawlstate.Counters { c.LinksNamed++; return c }
	last := f.begin(t)
	for i := 0; tl.n.Load() == 0; i++ {
		if i > 30 || !f.next(t, fmt.Sprintf("m%d", i), &last) {
			t.Fatalf("no tally after %d checks a minute apart", i)
		}
	}
	if len(f.pub.ev) != 0 {
		t.Fatalf("one tally that disagreed with the counters decided the end: %+v", f.pub.ev[0])
	}
	// The admission the tally read half of lands: its URL is queued, its counters move.
	raw := "http://a.test/late"
	if _, err := f.st.Admit(context.Background(), crawl, urlnorm.Key(raw), raw, raw, 1, "links-1"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i++ {
		f.next(t, fmt.Sprintf("n%d", i), &last)
	}
	for _, ev := range f.pub.ev {
		if ev.End == finish.EndDrained {
			t.Errorf("the crawl was announced drained with a URL queued: %+v", ev)
		}
	}
}
