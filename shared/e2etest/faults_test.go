package e2etest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/queue"
)

// recorder is a queue.Sender that keeps what it was sent.
type recorder struct{ sent map[string][]queue.Entry }

func (r *recorder) SendBatch(_ context.Context, q string, entries []queue.Entry) error {
	r.sent[q] = append(r.sent[q], entries...)
	return nil
}

func TestDoublerSendsEveryEntryTwice(t *testing.T) {
	rec := &recorder{sent: map[string][]queue.Entry{}}
	in := []queue.Entry{{ID: "a", Body: "1"}, {ID: "b", Body: "2", Delay: time.Second}}
	if err := (Doubler{rec}).SendBatch(context.Background(), "q", in); err != nil {
		t.Fatal(err)
	}
	got := rec.sent["q"]
	want := []queue.Entry{in[0], {ID: "a-dup", Body: "1"}, in[1], {ID: "b-dup", Body: "2", Delay: time.Second}}
	if len(got) != len(want) {
		t.Fatalf("sent %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestCountingSenderCountsOneQueue(t *testing.T) {
	rec := &recorder{sent: map[string][]queue.Entry{}}
	c := &CountingSender{Sender: rec, Queue: "fetch"}
	ctx := context.Background()
	for _, s := range []struct {
		queue   string
		entries []queue.Entry
	}{
		{"fetch", []queue.Entry{{ID: "a"}, {ID: "b", Delay: time.Second}}},
		{"parse", []queue.Entry{{ID: "c", Delay: time.Second}}},
		{"fetch", []queue.Entry{{ID: "d"}}},
	} {
		if err := c.SendBatch(ctx, s.queue, s.entries); err != nil {
			t.Fatal(err)
		}
	}
	if sent, delayed := c.Sent.Load(), c.Delayed.Load(); sent != 3 || delayed != 1 {
		t.Errorf("counted %d sent and %d delayed, want 3 and 1", sent, delayed)
	}
	if n := len(rec.sent["fetch"]) + len(rec.sent["parse"]); n != 4 {
		t.Errorf("passed on %d entries, want 4", n)
	}
}

func TestCrasherFailsEveryWriteAfterTheLimit(t *testing.T) {
	for _, limit := range []int64{0, 1, 3} {
		ctx, cancel := context.WithCancel(context.Background())
		c := &Crasher{Limit: limit, Cancel: cancel}
		for i := int64(1); i <= limit+2; i++ {
			err := c.step()
			if crashed := i > limit; crashed != errors.Is(err, ErrCrashed) {
				t.Errorf("limit %d: write %d returned %v, want a crash %v", limit, i, err, crashed)
			}
			if crashed := i > limit; crashed != (ctx.Err() != nil) {
				t.Errorf("limit %d: after write %d the context is %v, want cancelled %v", limit, i, ctx.Err(), crashed)
			}
		}
		cancel()
	}
}
