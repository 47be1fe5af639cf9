package sqsbatch

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
)

type fakeQuarantine struct {
	mu   sync.Mutex
	got  map[string]error
	fail bool
}

func (q *fakeQuarantine) Quarantine(_ context.Context, rec events.SQSMessage, reason error) error {
	if q.fail {
		return errors.New("store down")
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.got[rec.MessageId] = reason
	return nil
}

func batch(ids ...string) events.SQSEvent {
	var ev events.SQSEvent
	for _, id := range ids {
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: id, Body: id})
	}
	return ev
}

func failures(resp events.SQSEventResponse) []string {
	var ids []string
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	slices.Sort(ids)
	return ids
}

func TestRun(t *testing.T) {
	fn := func(_ context.Context, rec events.SQSMessage) error {
		switch rec.Body {
		case "poison":
			return errclass.Errorf(errclass.Poison, "bad json")
		case "transient":
			return errclass.Errorf(errclass.Timeout, "slow")
		case "panic":
			panic("boom")
		}
		return nil
	}
	tests := []struct {
		name           string
		quarantineDown bool
		nilQuarantine  bool
		want           []string
	}{
		{"poison quarantined, others fail alone", false, false, []string{"panic", "transient"}},
		{"quarantine down fails the poison too", true, false, []string{"panic", "poison", "transient"}},
		{"no quarantine fails the poison", false, true, []string{"panic", "poison", "transient"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := &fakeQuarantine{got: map[string]error{}, fail: tt.quarantineDown}
			r := &Runner{Quarantine: q, Concurrency: 3, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			if tt.nilQuarantine {
				r.Quarantine = nil
			}
			resp := r.Run(context.Background(), batch("ok1", "poison", "transient", "panic", "ok2"), fn)
			if got := failures(resp); !slices.Equal(got, tt.want) {
				t.Errorf("failures = %v, want %v", got, tt.want)
			}
			if !tt.quarantineDown && !tt.nilQuarantine && q.got["poison"] == nil {
				t.Error("the poison record was not quarantined")
			}
		})
	}
}

func TestReceiveCount(t *testing.T) {
	tests := map[string]int{"3": 3, "": 1, "x": 1, "0": 1}
	for in, want := range tests {
		rec := events.SQSMessage{Attributes: map[string]string{"ApproximateReceiveCount": in}}
		if got := ReceiveCount(rec); got != want {
			t.Errorf("ReceiveCount(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestEach(t *testing.T) {
	var running, most atomic.Int32
	failed := Each(20, 4, func(i int) string { return "id" + strconv.Itoa(i) }, func(i int) error {
		n := running.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		defer running.Add(-1)
		switch {
		case i == 7:
			panic("bug")
		case i%5 == 0:
			return errors.New("failed")
		}
		return nil
	})
	slices.Sort(failed)
	if want := []string{"id0", "id10", "id15", "id5", "id7"}; !slices.Equal(failed, want) {
		t.Errorf("failed = %v, want %v (the panic counts as a failure)", failed, want)
	}
	if most.Load() > 4 {
		t.Errorf("%d ran at once, over the limit of 4", most.Load())
	}
}
