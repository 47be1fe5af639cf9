package crawlstate

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// A host's circuit, shared by two stores (two workers): retries never open it; the third failed
// first request in a row does, whichever store sees it; a store that has not seen it learns it
// from its next booking of the host's slots; when the probe is due, one store takes it and the
// other waits; a failed probe keeps the circuit open, an answer closes it; the crawl's counters
// show one opening, closed, and the host throttled for its failures. It runs on both adapters of
// the table port (tableTests).
func testCircuitOpensAndAProbeClosesIt(t *testing.T, tb table.Table) {
	ctx := context.Background()
	c := &clock{t: time.Now()}
	opts := []Option{WithClock(c.now), WithCircuit(3, 10*time.Second)}
	s, other := New(tb, opts...), New(tb, opts...)
	const crawl, host = "circuit-cr", "circuit-down.test"

	for range 10 {
		if open, err := s.HostFailed(ctx, crawl, host, false, time.Second); err != nil || open {
			t.Fatalf("a retry's failure: open %v, %v; want the circuit closed", open, err)
		}
	}
	for i, st := range []*Store{s, s, other} {
		open, err := st.HostFailed(ctx, crawl, host, true, time.Second)
		if err != nil || open != (i == 2) {
			t.Fatalf("failure %d in a row: open %v, %v; want open only after the third", i+1, open, err)
		}
		c.t = c.t.Add(10 * time.Millisecond)
	}
	if w, _, err := other.CircuitWait(ctx, host); err != nil || w < 9*time.Second || w > 10*time.Second {
		t.Errorf("the store that opened it waits %v, %v; want about the probe interval", w, err)
	}
	if _, err := s.ReserveSlots(ctx, host, time.Second, 1, 0); err != nil {
		t.Fatal(err)
	}
	if w, _, err := s.CircuitWait(ctx, host); err != nil || w <= 0 {
		t.Errorf("the other store, after a booking, waits %v, %v; want it to wait for the probe", w, err)
	}

	c.t = c.t.Add(10 * time.Second)
	if w, probe, err := s.CircuitWait(ctx, host); err != nil || w != 0 || !probe {
		t.Fatalf("the probe is due: the first asker waits %v (probe %v), %v; want it to send the probe", w, probe, err)
	}
	if w, probe, err := other.CircuitWait(ctx, host); err != nil || w < 9*time.Second || probe {
		t.Errorf("a second asker waits %v, %v; want it to wait for the next probe", w, err)
	}
	if open, err := s.HostFailed(ctx, crawl, host, true, time.Second); err != nil || !open {
		t.Errorf("the probe failed: open %v, %v; want the circuit still open", open, err)
	}

	c.t = c.t.Add(10 * time.Second)
	if w, probe, err := other.CircuitWait(ctx, host); err != nil || w != 0 || !probe {
		t.Fatalf("the next probe: %v (probe %v), %v; want it sent", w, probe, err)
	}
	if err := other.HostAnswered(ctx, crawl, host, 10*time.Millisecond, time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReserveSlots(ctx, host, time.Second, 1, 0); err != nil {
		t.Fatal(err)
	}
	if w, probe, err := s.CircuitWait(ctx, host); err != nil || w != 0 || probe {
		t.Errorf("after the probe's answer the circuit waits %v (probe %v), %v; want it closed", w, probe, err)
	}

	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := s.CountersWithHosts(ctx, crawl)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Circuits) != 1 || got.Circuits[0].Host != host || got.Circuits[0].Opens != 1 || got.Circuits[0].Open() {
		t.Errorf("circuits in the counters = %+v; want %s opened once, closed again", got.Circuits, host)
	}
	if len(got.Throttled) != 1 || got.Throttled[0].Why != Why5xx || got.Throttled[0].Raises < 1 {
		t.Errorf("throttled in the counters = %+v; want %s raised for its failures", got.Throttled, host)
	}
}

// With WithCircuit's failures below 0 no number of failures opens a circuit.
func TestCircuitOff(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t, WithCircuit(-1, 0))
	for range 20 {
		if open, err := s.HostFailed(ctx, "", "h.test", true, 0); err != nil || open {
			t.Fatalf("open %v, %v; want the circuit never open", open, err)
		}
	}
	if w, _, _ := s.CircuitWait(context.Background(), "h.test"); w != 0 {
		t.Errorf("wait %v, want none", w)
	}
}

// Two answers in a row much slower than the host's usual raise its gap (WhySlow), one alone does
// not, nor does one under SlowAnswer, however much slower; answers that are not slow speed a throttled host up again,
// halving what is left of its gap once a second at most.
func TestSlowAnswersThrottleAndGoodOnesSpeedUp(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t)
	const host = "slow.test"
	for range slowSamples {
		if err := s.HostAnswered(ctx, "cr", host, 100*time.Millisecond, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.HostAnswered(ctx, "cr", host, 900*time.Millisecond, time.Second); err != nil || s.Throttled(host) != 0 {
		t.Fatalf("an answer under %v: gap %v, %v; want none", SlowAnswer, s.Throttled(host), err)
	}
	// One slow answer alone is the long tail of a healthy host's answer times: no raise, and no
	// write. A second in a row raises the gap.
	if err := s.HostAnswered(ctx, "cr", host, 3*time.Second, time.Second); err != nil || s.Throttled(host) != 0 {
		t.Fatalf("one 3 s answer after 100 ms ones: gap %v, %v; want none", s.Throttled(host), err)
	}
	if it, err := s.t.Get(ctx, slotKey(host)); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("one slow answer wrote the host's slot item: %v, %v; want no item", it, err)
	}
	if err := s.HostAnswered(ctx, "cr", host, 3*time.Second, time.Second); err != nil || s.Throttled(host) != 2*time.Second {
		t.Fatalf("a second 3 s answer in a row: gap %v, %v; want twice the configured 1s", s.Throttled(host), err)
	}
	got, err := s.CountersWithHosts(ctx, "cr")
	if err != nil || len(got.Throttled) != 1 || got.Throttled[0].Why != WhySlow {
		t.Errorf("throttled in the counters = %+v, %v; want %s throttled as slow", got.Throttled, err, host)
	}

	// A good answer at once leaves the raise alone; a second later it halves what is left.
	if err := s.HostAnswered(ctx, "cr", host, 100*time.Millisecond, time.Second); err != nil || s.Throttled(host) != 2*time.Second {
		t.Errorf("a good answer right after the raise: gap %v, %v; want it left at 2s", s.Throttled(host), err)
	}
	c.t = c.t.Add(raiseEvery)
	left := s.Throttled(host)
	if err := s.HostAnswered(ctx, "cr", host, 100*time.Millisecond, time.Second); err != nil {
		t.Fatal(err)
	}
	// Another store reads the halved gap from the slot item.
	other := New(s.t, WithClock(c.now))
	if _, err := other.ReserveSlots(ctx, host, time.Second, 1, 0); err != nil {
		t.Fatal(err)
	}
	if got := other.Throttled(host); got < left/2-time.Millisecond || got > left/2 {
		t.Errorf("after a good answer a second later the gap is %v, want half of %v", got, left)
	}

	// What is left is now under the configured gap, which the host goes at whatever it is: a
	// good answer another second later writes nothing, and the gap decays by itself.
	set := slowAtOf(t, s, host)
	c.t = c.t.Add(raiseEvery)
	if err := s.HostAnswered(ctx, "cr", host, 100*time.Millisecond, time.Second); err != nil {
		t.Fatal(err)
	}
	if got := slowAtOf(t, s, host); got != set {
		t.Errorf("a good answer with %v left of the gap, under the configured 1s, rewrote it (set at %d, now %d): want no write",
			s.Throttled(host), set, got)
	}
}

// slowAtOf reads when the host's throttled gap was last set, from its slot item.
func slowAtOf(t *testing.T, s *Store, host string) int64 {
	t.Helper()
	it, err := s.t.Get(context.Background(), slotKey(host))
	if err != nil || it == nil {
		t.Fatalf("read the slot item of %s: %v, %v", host, it, err)
	}
	return it.Int(attrSlowAt)
}

// The answer times of at most maxAnswerHosts hosts are kept: the next host starts them again.
func TestAnswerTimesAreBounded(t *testing.T) {
	var a answerTimes
	for i := range maxAnswerHosts {
		a.slow(fmt.Sprint("h", i, ".test"), time.Millisecond)
	}
	if len(a.hosts) != maxAnswerHosts {
		t.Fatalf("%d hosts kept, want %d", len(a.hosts), maxAnswerHosts)
	}
	a.slow("one-more.test", time.Millisecond)
	if len(a.hosts) != 1 {
		t.Errorf("after one host more, %d hosts kept; want them started again with it alone", len(a.hosts))
	}
}
