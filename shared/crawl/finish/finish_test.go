package finish_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/cost"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/finish"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/local/sqlite"
	"github.com/crawlstack/crawlstack/shared/port/queue"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// sent keeps the checks sent.
type sent struct {
	mu     sync.Mutex
	checks []*message.Check
	delays []time.Duration
	// fail: the next fail sends fail.
	fail int
}

func (s *sent) SendBatch(_ context.Context, _ string, entries []queue.Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail > 0 {
		s.fail--
		return errors.New("injected: the send failed")
	}
	for _, e := range entries {
		m, err := message.DecodeCheck(e.Body)
		if err != nil {
			return err
		}
		s.checks, s.delays = append(s.checks, m), append(s.delays, e.Delay)
	}
	return nil
}

// published keeps the events put; the first fail puts fail.
type published struct {
	mu   sync.Mutex
	ev   []finish.Event
	fail int
}

func (p *published) Publish(_ context.Context, e finish.Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail > 0 {
		p.fail--
		return errors.New("injected: the put failed")
	}
	p.ev = append(p.ev, e)
	return nil
}

// scans counts the table's queries: a drain check's tally queries the crawl's partitions.
type scans struct {
	table.Table
	n atomic.Int64
}

func (s *scans) Query(ctx context.Context, part, prefix string, fn func(string, table.Item) error) error {
	s.n.Add(1)
	return s.Table.Query(ctx, part, prefix, fn)
}

func (s *scans) QueryAfter(ctx context.Context, part, prefix, after string, fn func(string, table.Item) error) error {
	s.n.Add(1)
	return s.Table.QueryAfter(ctx, part, prefix, after, fn)
}

type fixture struct {
	st    *crawlstate.Store
	c     *finish.Checker
	send  *sent
	pub   *published
	scans *scans
	now   time.Time
}

const crawl = "c1"

func newFixture(t *testing.T, quiet time.Duration) *fixture {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f := &fixture{send: &sent{}, pub: &published{}, now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	f.scans = &scans{Table: db.Table("t")}
	f.st = crawlstate.New(f.scans, crawlstate.WithClock(func() time.Time { return f.now }), crawlstate.WithRunCheck(-1))
	f.c = &finish.Checker{State: f.st, Pub: f.pub, Send: f.send, Queue: "schedule", Every: time.Minute, Quiet: quiet,
		Prices: cost.DefaultPrices(), Now: func() time.Time { return f.now }}
	if err := f.st.MarkStarted(context.Background(), crawl); err != nil {
		t.Fatal(err)
	}
	return f
}

// legacy makes the crawl one started before crawls counted their end's counters (no endCounted on
// its item, as MarkStarted writes it now): its checks tally once its counters are quiet.
func (f *fixture) legacy(t *testing.T) {
	t.Helper()
	if _, err := f.scans.Update(context.Background(), crawlstate.CrawlKey(crawl), table.Update{Remove: []string{"endCounted"}}, table.Cond{}); err != nil {
		t.Fatal(err)
	}
	if ch, err := f.st.ChecksOf(context.Background(), crawl); err != nil || ch.Counted {
		t.Fatalf("ChecksOf = %+v, %v; want a crawl with no end's counters", ch, err)
	}
}

// check runs check seq, delivered as id, and fails the test on an error.
func (f *fixture) check(t *testing.T, seq int, id string) {
	t.Helper()
	if err := f.c.Check(context.Background(), &message.Check{Header: message.Header{Crawl: crawl}, Seq: seq}, id); err != nil {
		t.Fatalf("check %d (%s): %v", seq, id, err)
	}
}

func (f *fixture) checksSent() []int {
	f.send.mu.Lock()
	defer f.send.mu.Unlock()
	var out []int
	for _, m := range f.send.checks {
		out = append(out, m.Seq)
	}
	return out
}

func TestBeginSendsTheFirstCheckDelayed(t *testing.T) {
	f := newFixture(t, 0)
	if err := f.c.Begin(context.Background(), crawl); err != nil {
		t.Fatal(err)
	}
	if got := f.checksSent(); len(got) != 1 || got[0] != 0 || f.send.delays[0] != time.Minute {
		t.Fatalf("checks sent %v with delays %v, want check 0 after a minute", got, f.send.delays)
	}
}

// TestAnEmptyCrawlEndsAfterItsQuietTime: the counters of a crawl with no end's counters must
// stand still for Quiet before the end.
func TestAnEmptyCrawlEndsAfterItsQuietTime(t *testing.T) {
	f := newFixture(t, 2*time.Minute)
	f.legacy(t)
	f.check(t, 0, "m0") // the counters seen for the first time: not quiet yet
	f.now = f.now.Add(time.Minute)
	f.check(t, 1, "m1")
	if len(f.pub.ev) != 0 {
		t.Fatalf("ended after a minute of a 2-minute quiet time: %+v", f.pub.ev)
	}
	f.now = f.now.Add(time.Minute)
	f.check(t, 2, "m2")
	if len(f.pub.ev) != 1 || f.pub.ev[0].End != finish.EndDrained || f.pub.ev[0].EventID != finish.EventID(crawl) {
		t.Fatalf("events %+v, want the crawl's end once its counters stood still for 2 minutes", f.pub.ev)
	}
	if got := f.checksSent(); len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Errorf("checks sent %v, want 1 and 2, and none after the end", got)
	}
	ch, err := f.st.ChecksOf(context.Background(), crawl)
	if err != nil || ch.End != crawlstate.EndAnnounced {
		t.Errorf("the crawl's end is %q (%v), want announced", ch.End, err)
	}
	f.check(t, 3, "m3") // a check after the end does nothing
	if len(f.pub.ev) != 1 || len(f.checksSent()) != 2 {
		t.Errorf("a check after the end put %d events and sent %v", len(f.pub.ev), f.checksSent())
	}
}

// TestAQueuedURLKeepsTheCrawlGoingAndIsTalliedOnce: a crawl with a URL left is quiet but not
// drained; its items are tallied once, then again only after another quiet time.
func TestAQueuedURLKeepsTheCrawlGoingAndIsTalliedOnce(t *testing.T) {
	f := newFixture(t, time.Minute)
	f.legacy(t)
	ctx := context.Background()
	if _, err := f.st.Admit(ctx, crawl, "k1", "http://a.test/", "", 0, "links-1"); err != nil {
		t.Fatal(err)
	}
	f.check(t, 0, "m0")
	f.now = f.now.Add(time.Minute)
	before := f.scans.n.Load()
	f.check(t, 1, "m1") // quiet: tallied, a URL queued
	tallied := f.scans.n.Load() - before
	f.now = f.now.Add(10 * time.Second)
	f.check(t, 2, "m2") // nothing moved since the tally: no scan
	if len(f.pub.ev) != 0 {
		t.Fatalf("a crawl with a queued URL ended: %+v", f.pub.ev)
	}
	if tallied == 0 || f.scans.n.Load()-before != tallied {
		t.Errorf("scans: %d by the first quiet check, %d in all: want a tally once", tallied, f.scans.n.Load()-before)
	}
	f.now = f.now.Add(time.Minute)
	f.check(t, 3, "m3") // a quiet time after the last tally: tallied again
	if f.scans.n.Load()-before != 2*tallied {
		t.Errorf("scans %d after another quiet time, want %d", f.scans.n.Load()-before, 2*tallied)
	}
}

// TestACopyOfACheckDoesNothing: a second delivery (another message id) of a check the chain has
// passed sends nothing and ends nothing; the check's own redelivery sends its next check again.
func TestACopyOfACheckDoesNothing(t *testing.T) {
	f := newFixture(t, time.Hour)
	f.legacy(t)
	f.check(t, 0, "m0")
	f.check(t, 0, "copy")
	if got := f.checksSent(); len(got) != 1 || got[0] != 1 {
		t.Fatalf("checks sent %v, want check 1 once", got)
	}
	f.check(t, 0, "m0") // its own redelivery: it may have died before sending check 1
	if got := f.checksSent(); len(got) != 2 || got[1] != 1 {
		t.Fatalf("checks sent %v, want check 1 again", got)
	}
	f.check(t, 1, "m1")
	f.check(t, 0, "m0") // the chain has moved on past its own step
	if got := f.checksSent(); len(got) != 3 || got[2] != 2 {
		t.Fatalf("checks sent %v, want 1, 1, 2", got)
	}
}

// TestAPausedCrawlDoesNotEnd; a stopped one ends "stopped".
func TestAPausedCrawlDoesNotEndAndAStoppedOneEndsStopped(t *testing.T) {
	f := newFixture(t, 0)
	ctx := context.Background()
	if err := f.st.SetRun(ctx, crawl, crawlstate.Paused); err != nil {
		t.Fatal(err)
	}
	f.check(t, 0, "m0")
	f.now = f.now.Add(time.Hour)
	f.check(t, 1, "m1")
	if len(f.pub.ev) != 0 {
		t.Fatalf("a paused crawl ended: %+v", f.pub.ev)
	}
	if err := f.st.SetRun(ctx, crawl, crawlstate.StoppedBy); err != nil {
		t.Fatal(err)
	}
	f.check(t, 2, "m2")
	if len(f.pub.ev) != 1 || f.pub.ev[0].End != finish.EndStopped {
		t.Fatalf("events %+v, want one that says stopped", f.pub.ev)
	}
}

// TestACopyTakesOverAnEndLeftPending: the deciding check fails to put the event (and is to come
// again); a copy of it (or the check moved back from its dead-letter queue under a new id) waits
// while the end is younger than the quiet time, then takes it over and puts it, once.
func TestACopyTakesOverAnEndLeftPending(t *testing.T) {
	f := newFixture(t, time.Minute)
	f.legacy(t)
	f.pub.fail = 1
	f.check(t, 0, "m0")
	f.now = f.now.Add(time.Minute)
	msg := func(seq int) *message.Check { return &message.Check{Header: message.Header{Crawl: crawl}, Seq: seq} }
	if err := f.c.Check(context.Background(), msg(1), "m1"); err == nil {
		t.Fatal("the deciding check's failed put was not an error: it would not come again")
	}
	f.now = f.now.Add(10 * time.Second)
	if err := f.c.Check(context.Background(), msg(1), "redriven"); !errors.Is(err, finish.ErrEndPending) {
		t.Fatalf("a copy of the deciding check right after the decision: %v, want ErrEndPending", err)
	}
	if len(f.pub.ev) != 0 {
		t.Fatalf("the copy put %+v while the decider had its deliveries", f.pub.ev)
	}
	f.now = f.now.Add(time.Minute)
	f.check(t, 1, "redriven")
	f.check(t, 1, "m1") // the decider comes again: announced already
	f.check(t, 1, "another")
	if len(f.pub.ev) != 1 || f.pub.ev[0].EventID != finish.EventID(crawl) {
		t.Fatalf("events put %+v, want the end once", f.pub.ev)
	}
	if ch, err := f.st.ChecksOf(context.Background(), crawl); err != nil || ch.End != crawlstate.EndAnnounced || ch.EndBy != "redriven" {
		t.Errorf("the end is %q by %q (%v), want announced by the check that took it over", ch.End, ch.EndBy, err)
	}
}

// TestALinksMessageNotAdmittedKeepsTheCrawlFromItsEnd: a Links message named sent (a seed file's,
// or a page's on its parse mark) and not marked admitted keeps the crawl from its end however long
// it takes, with a quiet time of zero; a parse mark that names none (written before marks named
// them) keeps nothing. The end comes with the check after the Links message is admitted.
func TestALinksMessageNotAdmittedKeepsTheCrawlFromItsEnd(t *testing.T) {
	f := newFixture(t, 0)
	f.c.StallAfter = 100 * time.Hour // not stalled: this is about the end
	ctx := context.Background()
	if err := f.st.NoteLinksSent(ctx, crawl, "seeds", []string{"seed-links"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.MarkMessageParsedLinks(ctx, crawl, "page-1", "", []string{"page-links"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.MarkMessageParsedIn(ctx, crawl, "old-page", ""); err != nil {
		t.Fatal(err)
	}
	seq := 0
	for _, admitted := range [][]string{{"seed-links"}, nil, {"page-links"}} {
		for range 3 { // failed deliveries of the Links message left, an hour apart
			f.check(t, seq, "m"+string(rune('a'+seq)))
			seq++
			f.now = f.now.Add(time.Hour)
			if len(f.pub.ev) != 0 {
				t.Fatalf("the crawl ended with a Links message not admitted: %+v", f.pub.ev)
			}
		}
		if err := f.st.MarkLinksAdmitted(ctx, crawl, admitted); err != nil {
			t.Fatal(err)
		}
	}
	f.check(t, seq, "last")
	if len(f.pub.ev) != 1 || f.pub.ev[0].End != finish.EndDrained {
		t.Fatalf("events %+v once every Links message was admitted, want the crawl's end", f.pub.ev)
	}
}

// TestChecksRenewALongCrawlsItems: a crawl that runs past RenewEvery (23 days) has its items
// renewed by its checks, a retention from the renewal, and admits new URLs again: its URL items
// never expire under it.
func TestChecksRenewALongCrawlsItems(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, time.Minute)
	if _, err := f.st.Admit(ctx, crawl, "k", "http://a.test/", "http://a.test/", 0, "L"); err != nil {
		t.Fatal(err)
	}
	f.check(t, 0, "m0")
	f.now = f.now.Add(24 * 24 * time.Hour)
	if err := f.st.AdmissionOpen(ctx, crawl); err == nil {
		t.Fatal("24 days in, no renewal yet: admission open, want closed")
	}
	f.check(t, 1, "m1")
	it, err := f.scans.Get(ctx, crawlstate.URLKey(crawl, "k"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := time.Unix(it.Int(table.TTLAttr), 0), f.now.Add(crawlstate.DefaultRetention); !got.Equal(want) {
		t.Errorf("the URL item expires %v after the check, want %v (renewed)", got, want)
	}
	f.now = f.now.Add(2 * time.Minute) // past the store's cache of the last renewal
	if err := f.st.AdmissionOpen(ctx, crawl); err != nil {
		t.Errorf("after the renewal: %v, want admission open", err)
	}
}
