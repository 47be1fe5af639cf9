package fetcher

import (
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/message"
)

// TestALateURLOfARunTakesItsNextSlot: a run's URL late for its slot (by half an interval or more)
// takes the run's next slot still ahead, the URLs after it shift along, and the last holds none
// (it books when it comes to it); a run whose slots have all gone by holds none, and books the
// rest again. A slot booked at a narrower gap than the host's now is not held.
func TestALateURLOfARunTakesItsNextSlot(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	sec := time.Second
	at := func(d time.Duration) time.Time { return now.Add(d) }
	for _, tc := range []struct {
		name  string
		slots []time.Time
		gap   time.Duration
		want  []time.Time
		first bool
	}{
		{"the first late", []time.Time{at(-600 * time.Millisecond), at(400 * time.Millisecond), at(1400 * time.Millisecond)}, sec,
			[]time.Time{at(400 * time.Millisecond), at(1400 * time.Millisecond), {}}, true},
		{"in its slot", []time.Time{at(-400 * time.Millisecond), at(600 * time.Millisecond)}, sec,
			[]time.Time{at(-400 * time.Millisecond), at(600 * time.Millisecond)}, true},
		{"all gone by", []time.Time{at(-3 * sec), at(-2 * sec), at(-sec)}, sec, []time.Time{{}, {}, {}}, false},
		{"none held", []time.Time{{}, {}}, sec, []time.Time{{}, {}}, false},
		{"a narrower gap", []time.Time{at(sec), at(2 * sec)}, sec / 2, []time.Time{{}, {}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rest []*work
			for _, s := range tc.slots {
				rest = append(rest, &work{msg: &message.Fetch{Target: message.Target{Slot: s, Gap: tc.gap.Milliseconds()}}})
			}
			if got := shiftRun(rest, now, sec); got != tc.first {
				t.Errorf("shiftRun = %v, want %v", got, tc.first)
			}
			for i, w := range rest {
				if !w.msg.Slot.Equal(tc.want[i]) {
					t.Errorf("URL %d: slot %v, want %v", i, w.msg.Slot, tc.want[i])
				}
				if w.msg.Slot.IsZero() != (w.msg.Gap == 0) {
					t.Errorf("URL %d: slot %v with gap %dms", i, w.msg.Slot, w.msg.Gap)
				}
			}
		})
	}
}
