package fetcher_test

import (
	"context"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/handler/fetcher"
)

// Copies of one fetch message (SQS delivers at least once) that come back to wait for their host:
// only one of them may go on booking the host's politeness slots.

// comeBack is the record id's fetch message for path, re-queued once to wait (Waits 1), from the
// owners prev, holding slot (zero: none) booked gap apart.
func (e *env) comeBack(id, path string, prev []string, slot time.Time, gap time.Duration) events.SQSMessage {
	e.t.Helper()
	rec := e.record(id, path, 1)
	m, err := message.DecodeFetch(rec.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	m.Waits, m.Prev, m.Slot, m.Gap = 1, prev, slot, gap.Milliseconds()
	if rec.Body, err = message.Encode(m); err != nil {
		e.t.Fatal(err)
	}
	return rec
}

// hostBusy books the site's host's next politeness slot at interval, as another worker that has
// just fetched from it would.
func (e *env) hostBusy(interval time.Duration) {
	e.t.Helper()
	u, _ := url.Parse(e.url("/"))
	if _, err := e.state.ReserveSlot(context.Background(), u.Host, interval); err != nil {
		e.t.Fatal(err)
	}
}

// nextSlotIn is how far off the host's next free politeness slot is, booked as a probe.
func (e *env) nextSlotIn(interval time.Duration) time.Duration {
	e.t.Helper()
	u, _ := url.Parse(e.url("/"))
	got, err := e.state.ReserveSlots(context.Background(), u.Host, interval, 1, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return time.Until(got.Start)
}

// TestACopyThatCameBackForAURLAnotherHoldsEndsBeforeItsSlot: a message that came back to wait
// finds its URL claimed by another message whose lease runs: it is that message's duplicate and
// ends there, with no request, no re-queue and no slot booked. One the claim passes to (its Prev
// names the holder), or one that finds the holder's lease over, goes on waiting for its host.
func TestACopyThatCameBackForAURLAnotherHoldsEndsBeforeItsSlot(t *testing.T) {
	interval := 100 * time.Second
	cases := []struct {
		name  string
		prev  []string
		lease time.Duration // the holder's lease from now
		ends  bool
	}{
		{name: "a copy", lease: time.Minute, ends: true},
		{name: "a copy re-queued from another owner", prev: []string{"msg-0"}, lease: time.Minute, ends: true},
		{name: "the holder's re-queued message", prev: []string{"msg-0", "msg-1"}, lease: time.Minute},
		{name: "a copy after the holder's lease", lease: -time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(c *fetcher.Config) { c.HostRPS = float64(time.Second) / float64(interval) })
			rec := e.comeBack("msg-2", "/about", tc.prev, time.Time{}, 0)
			if _, err := e.state.Claim(context.Background(), crawl, keyOf(t, e.url("/about")), "msg-1", tc.lease); err != nil {
				t.Fatal(err)
			}
			e.hostBusy(interval)
			if got := e.handle(rec); len(got) != 0 {
				t.Errorf("BatchItemFailures = %v, want none", got)
			}
			msgs := e.received(fetchQ)
			if n := e.site.hitsOf("/about"); n != 0 {
				t.Errorf("%d requests while the host's slot was taken, want 0", n)
			}
			booked := e.nextSlotIn(interval) > 3*interval/2
			if tc.ends {
				if len(msgs) != 0 || booked {
					t.Errorf("the copy of a held URL was re-queued %d times, booked a slot: %v; want it dropped", len(msgs), booked)
				}
				return
			}
			if len(msgs) != 1 || !booked {
				t.Fatalf("re-queued %d times, booked a slot: %v; want it to wait for its own slot", len(msgs), booked)
			}
			again, err := message.DecodeFetch(msgs[0].Body)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.claimAs(again, "msg-3"); err != nil {
				t.Errorf("the URL cannot be claimed by the message that waits for it: %v", err)
			}
		})
	}
}

// TestCopiesThatLostTheirSlotBookOneBetweenThem: two copies of a message re-queued for a slot both
// lose it, by coming late or because the host's gap was raised since. The first claims its URL and
// books the next slot; the second finds the URL held and ends: one re-queued message between them,
// one slot booked, and the claim passes to the re-queued message.
func TestCopiesThatLostTheirSlotBookOneBetweenThem(t *testing.T) {
	interval := 100 * time.Second
	cases := []struct {
		name string
		slot time.Duration // the slot both copies hold, from now
		gap  time.Duration // the gap it was booked at
	}{
		{name: "late", slot: -interval, gap: interval},
		{name: "gap raised", slot: 500 * time.Millisecond, gap: interval / 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(c *fetcher.Config) { c.HostRPS = float64(time.Second) / float64(interval) })
			e.hostBusy(interval)
			slot := time.Now().Add(tc.slot)
			for _, id := range []string{"copy-a", "copy-b"} {
				if got := e.handle(e.comeBack(id, "/about", []string{"msg-0"}, slot, tc.gap)); len(got) != 0 {
					t.Errorf("%s: BatchItemFailures = %v, want none", id, got)
				}
			}
			again, _, _ := e.requeued()
			if n := e.site.hitsOf("/about"); n != 0 {
				t.Errorf("%d requests while the host's slot was taken, want 0", n)
			}
			if again.Slot.IsZero() || !slices.Contains(again.Prev, "copy-a") {
				t.Errorf("re-queued %+v: want a slot of its own, and the claim of copy-a passed on", again)
			}
			// The other worker's slot, copy-a's, and the probe's: copy-b booked none.
			if in := e.nextSlotIn(interval); in > 5*interval/2 {
				t.Errorf("the host's next slot is %v away: both copies booked one", in)
			}
			if it := e.item("/about"); it.Owner != crawlstate.OwnerTag("copy-a") {
				t.Errorf("url = %+v, want it claimed by copy-a while it waits", it)
			}
			if err := e.claimAs(again, "msg-3"); err != nil {
				t.Errorf("the re-queued message cannot claim its URL: %v", err)
			}
		})
	}
}
