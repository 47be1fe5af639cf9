package fetcher

import (
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/message"
)

// TestALateURLOfARunTakesItsNextSlot: a run's URL late for its slot (by half an interval or more)
// takes the run's next slot still ahead, the URLs after it shift along, and the last holds none
// (it books when it comes to it); a run whose slots have all gone by holds none, and books the
// rest again. When the host's gap is now wider than the slots were booked at (a slow answer
// throttled it), the run keeps the slots that are the new gap apart, from its last request on.
func TestALateURLOfARunTakesItsNextSlot(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	sec := time.Second
	at := func(d time.Duration) time.Time { return now.Add(d) }
	for _, tc := range []struct {
		name  string
		slots []time.Time
		gap   time.Duration
		last  time.Time
		want  []time.Time
		first bool
	}{
		{"the first late", []time.Time{at(-600 * time.Millisecond), at(400 * time.Millisecond), at(1400 * time.Millisecond)}, sec, time.Time{},
			[]time.Time{at(400 * time.Millisecond), at(1400 * time.Millisecond), {}}, true},
		{"in its slot", []time.Time{at(-400 * time.Millisecond), at(600 * time.Millisecond)}, sec, at(-1400 * time.Millisecond),
			[]time.Time{at(-400 * time.Millisecond), at(600 * time.Millisecond)}, true},
		{"all gone by", []time.Time{at(-3 * sec), at(-2 * sec), at(-sec)}, sec, time.Time{}, []time.Time{{}, {}, {}}, false},
		{"none held", []time.Time{{}, {}}, sec, time.Time{}, []time.Time{{}, {}}, false},
		// Booked at half the host's gap now: every other slot, the first a whole gap after the
		// request before it (the slot before the first, when the run does not know it).
		{"a narrower gap, the request before unknown", []time.Time{at(sec), at(3 * sec / 2), at(2 * sec), at(5 * sec / 2)}, sec / 2, time.Time{},
			[]time.Time{at(3 * sec / 2), at(5 * sec / 2), {}, {}}, true},
		{"a narrower gap after the run's request", []time.Time{at(sec / 2), at(sec), at(3 * sec / 2), at(2 * sec)}, sec / 2, at(0),
			[]time.Time{at(sec), at(2 * sec), {}, {}}, true},
		{"a narrower gap, the request before too near", []time.Time{at(sec / 2)}, sec / 2, at(0), []time.Time{{}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rest []*work
			for _, s := range tc.slots {
				rest = append(rest, &work{msg: &message.Fetch{Target: message.Target{Slot: s, Gap: tc.gap.Milliseconds()}}})
			}
			if got := shiftRun(rest, now, sec, tc.last); got != tc.first {
				t.Errorf("shiftRun = %v, want %v", got, tc.first)
			}
			for i, w := range rest {
				if !w.msg.Slot.Equal(tc.want[i]) {
					t.Errorf("URL %d: slot %v, want %v", i, w.msg.Slot, tc.want[i])
				}
				if w.msg.Slot.IsZero() != (w.msg.Gap == 0) {
					t.Errorf("URL %d: slot %v with gap %dms", i, w.msg.Slot, w.msg.Gap)
				}
				if !w.msg.Slot.IsZero() && w.msg.Gap < sec.Milliseconds() {
					t.Errorf("URL %d: slot %v kept with gap %dms, narrower than the host's %v: not held", i, w.msg.Slot, w.msg.Gap, sec)
				}
			}
		})
	}
}
