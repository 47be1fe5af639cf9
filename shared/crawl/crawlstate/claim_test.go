package crawlstate

import (
	"context"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
)

// TestDoneSaysWhatAClaimWouldRefuse: Done tells a message that came back to wait whether its URL
// is done, or held by another owner's live claim that does not pass to it, and the claim the table
// then accepts or refuses for the same message is the oracle: a message Done finds done or held is
// one ClaimGroup leaves out, and every other one claims.
func TestDoneSaysWhatAClaimWouldRefuse(t *testing.T) {
	const key = "k"
	ctx := context.Background()
	cases := []struct {
		name string
		// setup brings the URL to the state the case reads it in.
		setup      func(t *testing.T, s *Store, c *clock)
		owner      string
		prev       []string
		done, held bool
	}{
		{name: "unclaimed", setup: func(*testing.T, *Store, *clock) {}, owner: "B"},
		{name: "held by another", setup: claimedBy("A"), owner: "B", held: true},
		{name: "held by its own earlier delivery", setup: claimedBy("A"), owner: "A"},
		{name: "held by the message that re-queued it", setup: claimedBy("A"), owner: "B", prev: []string{"X", "A"}},
		{name: "held by another named nowhere in prev", setup: claimedBy("A"), owner: "B", prev: []string{"X"}, held: true},
		{name: "held by another whose lease ended", setup: func(t *testing.T, s *Store, c *clock) {
			claimedBy("A")(t, s, c)
			c.t = c.t.Add(2 * time.Minute)
		}, owner: "B"},
		{name: "fetched", setup: func(t *testing.T, s *Store, c *clock) {
			claimedBy("A")(t, s, c)
			if ok, err := s.Finish(ctx, "c", key, "A", Queued, Fetched, nil); !ok || err != nil {
				t.Fatalf("Finish = %v, %v", ok, err)
			}
		}, owner: "A", done: true},
		{name: "failed on to the DLQ", setup: func(t *testing.T, s *Store, c *clock) {
			claimedBy("A")(t, s, c)
			if ok, err := s.FailRedrivable(ctx, "c", key, "A", Queued, errclass.Errorf(errclass.HTTP5xx, "503")); !ok || err != nil {
				t.Fatalf("FailRedrivable = %v, %v", ok, err)
			}
		}, owner: "B"},
		{name: "admission taken back", setup: func(t *testing.T, s *Store, c *clock) {
			if err := s.Unadmit(ctx, "c", key, key); err != nil {
				t.Fatal(err)
			}
		}, owner: "B", done: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, c := newStore(t)
			if res, err := s.Admit(ctx, "c", key, "http://a.test/", "http://a.test/", 0, "L"); err != nil || res != Admitted {
				t.Fatalf("Admit = %v, %v", res, err)
			}
			tc.setup(t, s, c)
			done, held, err := s.Done(ctx, "c", key, key, tc.owner, tc.prev)
			if err != nil {
				t.Fatal(err)
			}
			if done != tc.done || held != tc.held {
				t.Errorf("Done = done %v, held %v; want done %v, held %v", done, held, tc.done, tc.held)
			}
			got, err := s.ClaimGroup(ctx, "c", key, tc.owner, tc.prev, time.Minute, []string{key})
			if err != nil {
				t.Fatal(err)
			}
			if _, claimed := got[key]; claimed == (done || held) {
				t.Errorf("the claim of %s (prev %v) was taken = %v, while Done said done %v, held %v", tc.owner, tc.prev, claimed, done, held)
			}
		})
	}
}

// claimedBy returns a setup in which owner claims the URL "k" for a minute.
func claimedBy(owner string) func(*testing.T, *Store, *clock) {
	return func(t *testing.T, s *Store, _ *clock) {
		t.Helper()
		if _, err := s.Claim(context.Background(), "c", "k", owner, time.Minute); err != nil {
			t.Fatalf("claim as %s: %v", owner, err)
		}
	}
}
