package retry

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	const min, max = time.Second, 10 * time.Minute
	tests := []struct {
		name   string
		v      string
		want   time.Duration
		wantOK bool
	}{
		{"seconds", "120", 2 * time.Minute, true},
		{"spaces", " 7 ", 7 * time.Second, true},
		{"zero is min", "0", min, true},
		{"huge is max", "99999999999999999999999", max, true},
		{"large is max", "86400", max, true},
		{"negative", "-5", 0, false},
		{"fraction", "1.5", 0, false},
		{"garbage", "soon", 0, false},
		{"empty", "", 0, false},
		{"http-date", now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{"rfc850 date", "Friday, 02-Jan-26 03:04:35 GMT", 30 * time.Second, true},
		{"asctime date", "Fri Jan  2 03:04:50 2026", 45 * time.Second, true},
		{"past date is min", now.Add(-time.Hour).Format(http.TimeFormat), min, true},
		{"far future date is max", "Fri, 31 Dec 9999 23:59:59 GMT", max, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := RetryAfter(tt.v, now, min, max)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("RetryAfter(%q) = %v, %v; want %v, %v", tt.v, got, ok, tt.want, tt.wantOK)
			}
		})
	}
	t.Run("min 0 never gives 0", func(t *testing.T) {
		if got, ok := RetryAfter("0", now, 0, max); !ok || got <= 0 {
			t.Errorf("RetryAfter(0) with min 0 = %v, %v; want > 0, true", got, ok)
		}
	})
}

// fakeTimer fires at once and records every wait it was asked for.
type fakeTimer struct {
	waits []time.Duration
	c     chan time.Time
}

func newFakeTimer() *fakeTimer { return &fakeTimer{c: make(chan time.Time, 1)} }

func (f *fakeTimer) Start(d time.Duration) { f.waits = append(f.waits, d); f.c <- time.Time{} }
func (f *fakeTimer) Stop()                 {}
func (f *fakeTimer) C() <-chan time.Time   { return f.c }

// step is what one attempt returns.
type step struct {
	retryAfter time.Duration
	err        error
}

func TestDoWith(t *testing.T) {
	transient := errclass.Errorf(errclass.HTTP5xx, "503")
	permanent := errclass.Errorf(errclass.HTTP4xx, "404")
	tests := []struct {
		name      string
		maxQuick  time.Duration
		steps     []step
		wantCalls int
		wantWaits []time.Duration
		wantErr   error
		wantAfter time.Duration // > 0: a *Deferred with this After is expected
	}{
		{"success first", time.Minute, []step{{}}, 1, nil, nil, 0},
		{"retries transient then succeeds", time.Minute, []step{{0, transient}, {0, transient}, {}}, 3,
			[]time.Duration{100 * time.Millisecond, 200 * time.Millisecond}, nil, 0},
		{"permanent is not retried", time.Minute, []step{{0, permanent}, {}}, 1, nil, permanent, 0},
		{"unclassified is internal and retried", time.Minute, []step{{0, errors.New("boom")}, {}}, 2,
			[]time.Duration{100 * time.Millisecond}, nil, 0},
		{"retry-after within budget replaces backoff", time.Minute, []step{{5 * time.Second, transient}, {}}, 2,
			[]time.Duration{5 * time.Second}, nil, 0},
		{"retry-after over budget defers", 2 * time.Second, []step{{30 * time.Second, transient}, {}}, 1,
			nil, transient, 30 * time.Second},
		{"backoff over budget defers", 250 * time.Millisecond, []step{{0, transient}, {0, transient}, {0, transient}}, 2,
			[]time.Duration{100 * time.Millisecond}, transient, 200 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			timer := newFakeTimer()
			calls := 0
			err := DoWith(context.Background(), Options{
				MaxQuick: tt.maxQuick,
				BackOff:  fixedDoubling(),
				Timer:    timer,
			}, func() (time.Duration, error) {
				s := tt.steps[calls]
				calls++
				return s.retryAfter, s.err
			})
			if calls != tt.wantCalls {
				t.Errorf("calls = %d, want %d", calls, tt.wantCalls)
			}
			if !equalDurations(timer.waits, tt.wantWaits) {
				t.Errorf("waits = %v, want %v", timer.waits, tt.wantWaits)
			}
			if tt.wantErr == nil && err != nil {
				t.Fatalf("err = %v, want nil", err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			var d *Deferred
			if got := errors.As(err, &d); got != (tt.wantAfter > 0) {
				t.Fatalf("err = %v: deferred = %v, want %v", err, got, tt.wantAfter > 0)
			}
			if d != nil && d.After != tt.wantAfter {
				t.Errorf("Deferred.After = %v, want %v", d.After, tt.wantAfter)
			}
		})
	}
}

func TestDoWithBackOffGivesUp(t *testing.T) {
	transient := errclass.Errorf(errclass.Timeout, "slow")
	err := DoWith(context.Background(), Options{
		MaxQuick:   time.Hour,
		BackOff:    &backoff.StopBackOff{},
		Timer:      newFakeTimer(),
		DeferAfter: 42 * time.Second,
	}, func() (time.Duration, error) { return 0, transient })
	var d *Deferred
	if !errors.As(err, &d) || d.After != 42*time.Second || !errors.Is(err, transient) {
		t.Fatalf("err = %v, want Deferred after 42s wrapping %v", err, transient)
	}
}

func TestDoCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	err := DoWith(ctx, Options{MaxQuick: time.Hour, BackOff: fixedDoubling(), Timer: newFakeTimer()},
		func() (time.Duration, error) {
			calls++
			cancel()
			return 0, errclass.Errorf(errclass.Connect, "reset")
		})
	if !errors.Is(err, context.Canceled) || calls != 1 {
		t.Fatalf("err = %v after %d calls, want context.Canceled after 1", err, calls)
	}
}

func TestNewBackOff(t *testing.T) {
	b := NewBackOff()
	first := b.NextBackOff()
	if first < InitialInterval/2 || first > InitialInterval*3/2 {
		t.Errorf("first wait = %v, want within 50%% of %v", first, InitialInterval)
	}
	for range 20 {
		if d := b.NextBackOff(); d > MaxInterval*3/2 || d == backoff.Stop {
			t.Fatalf("wait = %v, want at most %v", d, MaxInterval*3/2)
		}
	}
}

// fixedDoubling is a deterministic backoff: 100 ms, 200 ms, 400 ms ...
func fixedDoubling() backoff.BackOff {
	return backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(100*time.Millisecond),
		backoff.WithMultiplier(2),
		backoff.WithRandomizationFactor(0),
		backoff.WithMaxElapsedTime(0),
	)
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
