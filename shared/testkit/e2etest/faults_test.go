package e2etest

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/port/queue"
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
		if !reflect.DeepEqual(got[i], want[i]) {
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
			err := c.before(Write{Kind: TablePut, Target: "k"})
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

func TestCrasherCrashesAtTheNthWriteOfItsStep(t *testing.T) {
	res := Resources{Schedule: "q-schedule", Fetch: "q-fetch", Parse: "q-parse"}
	for _, tc := range []struct {
		step  Step
		n     int64
		other Write // a write that is not the step
		at    Write // the step's write
	}{
		{AfterAdmission, 2, Write{Kind: Send, Target: "q-parse"}, Write{Kind: Send, Target: "q-fetch"}},
		{AfterPageRecorded, 1, Write{Kind: Send, Target: "q-fetch"}, Write{Kind: Send, Target: "q-parse"}},
		{AfterLinksSent, 3, Write{Kind: BlobPut, Target: "pages/c/x.warc.gz"}, Write{Kind: BlobPut, Target: "records/c/x.jsonl"}},
		{AfterRecordsStored, 2, Write{Kind: TableUpdate, Target: "records/c/x.jsonl"}, Write{Kind: BlobPut, Target: "records/c/y.jsonl"}},
		{BeforeDelete("fetch"), 2, Write{Kind: Delete, Target: "q-parse"}, Write{Kind: Delete, Target: "q-fetch"}},
		{AfterGroupWrite, 3, Write{Kind: TableUpdate, Target: "k", Item: "url"}, Write{Kind: TableUpdate, Target: "k", Item: "groups"}},
	} {
		t.Run(tc.step.Name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			c := &Crasher{At: tc.step, N: tc.n, Res: res, Cancel: cancel}
			// write runs one write through the crasher as a wrapped adapter does.
			write := func(w Write) error {
				if err := c.before(w); err != nil {
					return err
				}
				return c.done(w, nil)
			}
			for i := int64(1); i < tc.n; i++ {
				if err := write(tc.other); err != nil {
					t.Fatalf("another write crashed: %v", err)
				}
				if err := write(tc.at); err != nil {
					t.Fatalf("write %d of the step crashed, want write %d to", i, tc.n)
				}
			}
			if c.Crashed() || ctx.Err() != nil {
				t.Fatal("crashed before the step was reached")
			}
			err := write(tc.at)
			if !errors.Is(err, ErrCrashed) || !c.Crashed() || ctx.Err() == nil {
				t.Fatalf("write %d of the step returned %v (crashed %v): want the crash", tc.n, err, c.Crashed())
			}
			if err := write(tc.other); !errors.Is(err, ErrCrashed) {
				t.Errorf("a write after the crash returned %v, want ErrCrashed", err)
			}
		})
	}
}

func TestCrasherAfterAStepLetsTheWriteThrough(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := &Crasher{At: AfterRecordsStored, Cancel: cancel}
	w := Write{Kind: BlobPut, Target: "records/c/x.jsonl"}
	if err := c.before(w); err != nil {
		t.Fatalf("the write itself was refused: %v", err)
	}
	if err := c.done(w, nil); !errors.Is(err, ErrCrashed) || ctx.Err() == nil {
		t.Fatalf("after the write: %v, context %v: want ErrCrashed (the answer is lost) and the run cancelled", err, ctx.Err())
	}
	// A failed write does not reach the step's far side.
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	c2 := &Crasher{At: AfterRecordsStored, Cancel: cancel2}
	failed := errors.New("put failed")
	if err := c2.done(w, failed); err != failed || c2.Crashed() || ctx2.Err() != nil {
		t.Errorf("a failed write returned %v and crashed %v: want its own error and no crash", err, c2.Crashed())
	}
}
