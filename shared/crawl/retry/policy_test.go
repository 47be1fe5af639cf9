package retry

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
)

func TestDefaultPolicy(t *testing.T) {
	p := DefaultPolicy()
	for _, c := range []errclass.Class{errclass.HTTP5xx, errclass.HTTP429, errclass.Connect, errclass.RobotsUnavailable} {
		if n := p.Attempts(c); n != 4 {
			t.Errorf("Attempts(%s) = %d, want 4", c, n)
		}
	}
	if n := p.Attempts(errclass.Timeout); n != 2 {
		t.Errorf("Attempts(timeout) = %d, want 2: each try holds a fetch invocation for the whole timeout", n)
	}
	for _, c := range []errclass.Class{errclass.HTTP4xx, errclass.DNS, errclass.TLS, errclass.Robots} {
		if n := p.Attempts(c); n != 1 {
			t.Errorf("Attempts(%s) = %d, want 1: not worth a second request", c, n)
		}
	}
	for n, want := range map[int]time.Duration{1: 2 * time.Second, 2: 8 * time.Second, 3: 30 * time.Second, 9: 30 * time.Second} {
		if d := p.Delay(errclass.HTTP5xx, n); d != want {
			t.Errorf("Delay after request %d = %v, want %v", n, d, want)
		}
	}
	if p.Limits(errclass.Internal) || !p.Limits(errclass.HTTP5xx) {
		t.Error("the default policy must leave backend failures (internal) to the queue and bound the rest")
	}
}

// instant is a backoff.Timer that fires at once.
type instant struct{ c chan time.Time }

func (i *instant) Start(time.Duration) { i.c = make(chan time.Time, 1); i.c <- time.Time{} }
func (i *instant) Stop()               {}
func (i *instant) C() <-chan time.Time { return i.c }

var _ backoff.Timer = (*instant)(nil)

// TestPolicyBoundsRequestsAcrossDeliveries: the requests of earlier deliveries count, a server's
// Retry-After is a wait like the policy's, and the last allowed failure gives up (Exhausted).
func TestPolicyBoundsRequestsAcrossDeliveries(t *testing.T) {
	fail := errclass.Errorf(errclass.HTTP5xx, "status 503")
	for made, want := range map[int]int{0: 4, 2: 2, 3: 1} {
		calls := 0
		b := &PolicyBackOff{P: DefaultPolicy(), Made: made}
		err := DoWith(context.Background(), Options{MaxQuick: time.Hour, BackOff: b, Timer: &instant{}},
			func() (time.Duration, error) { calls++; return time.Second, fail })
		var spent *Exhausted
		if !errors.As(err, &spent) || !errors.Is(err, fail) {
			t.Errorf("after %d earlier requests: %v, want Exhausted wrapping the last failure", made, err)
		}
		if calls != want || b.Made != 4 {
			t.Errorf("after %d earlier requests: %d requests (%d in all), want %d (4 in all)", made, calls, b.Made, want)
		}
	}
	// A wait longer than the quick budget goes back to the caller as Deferred, with the count.
	b := &PolicyBackOff{P: DefaultPolicy()}
	err := DoWith(context.Background(), Options{MaxQuick: time.Second, BackOff: b, Timer: &instant{}},
		func() (time.Duration, error) { return 0, fail })
	var deferred *Deferred
	if !errors.As(err, &deferred) || deferred.After != 2*time.Second || b.Made != 1 {
		t.Errorf("DoWith = %v (made %d), want Deferred after 2s and one request made", err, b.Made)
	}
}

// TestTimeoutTries: Timeouts bounds the timeout class alone, never above Max; 0 leaves it at Max.
func TestTimeoutTries(t *testing.T) {
	for _, tc := range []struct{ max, timeouts, want int }{{4, 2, 2}, {4, 0, 4}, {3, 5, 3}, {4, 1, 1}} {
		p := Tries{Max: tc.max, Timeouts: tc.timeouts}
		if got := p.Attempts(errclass.Timeout); got != tc.want {
			t.Errorf("Max %d, Timeouts %d: Attempts(timeout) = %d, want %d", tc.max, tc.timeouts, got, tc.want)
		}
		if got := p.Attempts(errclass.HTTP5xx); got != tc.max {
			t.Errorf("Max %d, Timeouts %d: Attempts(http_5xx) = %d, want %d", tc.max, tc.timeouts, got, tc.max)
		}
	}
}

func TestGiveUpAfterAddsTheTriesAndTheWaits(t *testing.T) {
	p := DefaultPolicy()
	// 4 tries of 10 s, and the waits after the first three: 2 s, 8 s, 30 s.
	if got := GiveUpAfter(p, errclass.HTTP5xx, 10*time.Second); got != 80*time.Second {
		t.Errorf("GiveUpAfter(http_5xx, 10s) = %v, want 1m20s", got)
	}
	// A timeout: 2 tries of 10 s and the wait after the first.
	if got := GiveUpAfter(p, errclass.Timeout, 10*time.Second); got != 22*time.Second {
		t.Errorf("GiveUpAfter(timeout, 10s) = %v, want 22s", got)
	}
	// A class tried once: its one request, no wait.
	if got := GiveUpAfter(p, errclass.HTTP4xx, 10*time.Second); got != 10*time.Second {
		t.Errorf("GiveUpAfter(http_4xx, 10s) = %v, want 10s", got)
	}
}
