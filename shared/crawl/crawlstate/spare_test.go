package crawlstate

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// updateCounter counts the table's updates, each one a billed write whether or not its condition held.
type updateCounter struct {
	table.Table
	n atomic.Int64
}

func (u *updateCounter) Update(ctx context.Context, key table.Key, up table.Update, c table.Cond) (table.Item, error) {
	u.n.Add(1)
	return u.Table.Update(ctx, key, up, c)
}

func TestBookSlotsGivesOutSparesWithoutAWrite(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t)
	uc := &updateCounter{Table: s.t}
	s.t = uc
	t0 := c.t
	for i, want := range []struct {
		at     time.Duration
		writes int64
	}{{0, 1}, {time.Second, 1}, {2 * time.Second, 1}, {3 * time.Second, 2}} {
		got, err := s.BookSlots(ctx, "a.test", time.Second, 1, 0, 0, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.At) != 1 || !got.At[0].Equal(t0.Add(want.at)) || uc.n.Load() != want.writes {
			t.Fatalf("booking %d: %v after %d writes, want a slot at +%v after %d", i, got.At, uc.n.Load(), want.at, want.writes)
		}
	}
	// A batch of three URLs takes the two spares left and books one more with two spares of its own.
	got, err := s.BookSlots(ctx, "a.test", time.Second, 3, 0, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Time{t0.Add(4 * time.Second), t0.Add(5 * time.Second), t0.Add(6 * time.Second)}
	if !slices.EqualFunc(got.At, want, time.Time.Equal) || uc.n.Load() != 3 {
		t.Fatalf("three URLs: %v after %d writes, want %v after 3", got.At, uc.n.Load(), want)
	}
	// Another store on the table books after every spare: they are reserved on the host's item.
	other := New(s.t, WithClock(c.now))
	if got, err := other.ReserveSlots(ctx, "a.test", time.Second, 1, 0); err != nil || !got.Start.Equal(t0.Add(9*time.Second)) {
		t.Fatalf("another store: %+v, %v, want the slot at +9s, after the spares at +7s and +8s", got, err)
	}
}

func TestBookSlotsDropsSparesTooSoonGoneOrTooNarrow(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t)
	t0 := c.t
	if _, err := s.BookSlots(ctx, "a.test", time.Second, 1, 0, 0, 3); err != nil { // spares at +1s, +2s, +3s
		t.Fatal(err)
	}
	// 1.5 s later, with a lead of a second: +1s is gone, +2s too soon; +3s is given out.
	c.t = t0.Add(1500 * time.Millisecond)
	got, err := s.BookSlots(ctx, "a.test", time.Second, 1, 0, time.Second, 3)
	if err != nil || len(got.At) != 1 || !got.At[0].Equal(t0.Add(3*time.Second)) {
		t.Fatalf("after 1.5s: %v, %v, want the spare at +3s", got.At, err)
	}
	// The host is throttled to a wider gap: the next booking is new, at that gap, from the end of
	// the host's booking (+4s), and takes no spare booked at the narrower one.
	if _, err := s.SlowDown(ctx, "", "a.test", time.Second); err != nil {
		t.Fatal(err)
	}
	gap := s.Throttled("a.test")
	if gap <= time.Second {
		t.Fatalf("throttled gap %v, want wider than 1s", gap)
	}
	got, err = s.BookSlots(ctx, "a.test", time.Second, 2, 0, time.Second, 1)
	if err != nil || got.Interval != gap || len(got.At) != 2 || !got.At[0].Equal(t0.Add(4*time.Second)) || got.At[1].Sub(got.At[0]) != gap {
		t.Fatalf("throttled: %v at %v, %v; want two slots %v apart from +4s", got.At, got.Interval, err, gap)
	}
}

// Stores that book one host at random, with spares, never give out one slot twice nor two closer
// than the host's gap: a spare is reserved on the host's item like any other slot.
func TestBookSlotsKeepsEveryStoresSlotsApart(t *testing.T) {
	ctx := context.Background()
	a, c := newStore(t)
	stores := []*Store{a, New(a.t, WithClock(c.now)), New(a.t, WithClock(c.now))}
	r := rand.New(rand.NewPCG(1, 2))
	var all []time.Time
	for range 200 {
		s := stores[r.IntN(len(stores))]
		got, err := s.BookSlots(ctx, "a.test", time.Second, 1+r.IntN(3), 0, 0, r.IntN(4))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, got.At...)
		c.t = c.t.Add(time.Duration(r.IntN(1500)) * time.Millisecond)
	}
	slices.SortFunc(all, time.Time.Compare)
	for i := 1; i < len(all); i++ {
		if d := all[i].Sub(all[i-1]); d < time.Second {
			t.Fatalf("slots %v and %v are %v apart, want at least 1s", all[i-1], all[i], d)
		}
	}
	if len(all) < 200 {
		t.Fatalf("%d slots given out for 200 bookings of at least one", len(all))
	}
}

// No slot BookSlots gives starts sooner than its lead: a fetch message sent for one would arrive
// after it, and its fetcher would book another.
func TestBookSlotsStartsNoSoonerThanTheLead(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t)
	t0 := c.t
	lead := 2 * time.Second
	got, err := s.BookSlots(ctx, "idle.test", time.Second, 2, 0, lead, 0)
	if err != nil || len(got.At) != 2 || !got.At[0].Equal(t0.Add(lead)) || !got.Free.Equal(t0.Add(4*time.Second)) {
		t.Fatalf("an idle host: %v, free %v, %v; want slots from +2s, free at +4s", got.At, got.Free, err)
	}
	// A host booked until +1s by another worker is booked from the lead on; one booked past the
	// lead, from the end of its booking.
	other := New(s.t, WithClock(c.now))
	if _, err := other.ReserveSlots(ctx, "soon.test", time.Second, 1, 0); err != nil {
		t.Fatal(err)
	}
	if got, err := s.BookSlots(ctx, "soon.test", time.Second, 1, 0, lead, 0); err != nil || !got.At[0].Equal(t0.Add(lead)) {
		t.Fatalf("a host free at +1s: %v, %v; want a slot at +2s", got.At, err)
	}
	if _, err := other.ReserveSlots(ctx, "busy.test", time.Second, 5, 0); err != nil {
		t.Fatal(err)
	}
	if got, err := s.BookSlots(ctx, "busy.test", time.Second, 1, 0, lead, 0); err != nil || !got.At[0].Equal(t0.Add(5*time.Second)) {
		t.Fatalf("a host free at +5s: %v, %v; want a slot at +5s", got.At, err)
	}
}
