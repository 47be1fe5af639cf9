package gctune

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestLimitIsTheFloorOrTwiceTheLiveHeap(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int64
	}{
		{0, Floor},
		{(Floor - Slack) / 2, Floor},
		{(Floor-Slack)/2 + 1, Floor + 2},
		{1 << 30, 2<<30 + Slack},
		{math.MaxUint64, math.MaxInt64/4*2 + Slack},
	} {
		if got := Limit(c.live); got != c.want {
			t.Errorf("Limit(%d) = %d, want %d", c.live, got, c.want)
		}
	}
}

// settings reads the collector's percentage and memory limit without changing them.
func settings() (percent int, limit int64) {
	percent = debug.SetGCPercent(100)
	debug.SetGCPercent(percent)
	return percent, debug.SetMemoryLimit(-1)
}

func TestStartTunesUntilTheLastStop(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	beforeP, beforeL := settings()
	first := Start()
	second := Start() // a second run in the same process shares the tuning
	if p, l := settings(); p != Percent || l < Floor || l == beforeL {
		t.Fatalf("while tuned: GOGC %d and limit %d, want %d and at least %d", p, l, Percent, Floor)
	}
	first()
	first() // a second call of the same stop counts once
	if p, _ := settings(); p != Percent {
		t.Errorf("after one of two stops GOGC is %d, want still %d", p, Percent)
	}
	second()
	if p, l := settings(); p != beforeP || l != beforeL {
		t.Errorf("after the last stop: GOGC %d and limit %d, want %d and %d as before", p, l, beforeP, beforeL)
	}
}

func TestTheUsersSettingStands(t *testing.T) {
	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv("GOGC", "")
			t.Setenv("GOMEMLIMIT", "")
			t.Setenv(env, "150")
			beforeP, beforeL := settings()
			stop := Start()
			defer stop()
			if p, l := settings(); p != beforeP || l != beforeL {
				t.Errorf("with %s set: GOGC %d and limit %d, want %d and %d untouched", env, p, l, beforeP, beforeL)
			}
		})
	}
}

// TestTheLimitFollowsTheLiveHeap: a live heap larger than half the floor raises the limit to twice
// its size, so the collector never runs more often than GOGC=100 would make it.
func TestTheLimitFollowsTheLiveHeap(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	stop := Start()
	defer stop()
	held := make([]byte, 2*Floor)
	for i := range held {
		held[i] = byte(i)
	}
	runtime.GC() // the live heap now holds held
	want := int64(2*len(held)) + Slack
	deadline := time.After(10 * Interval)
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	for _, l := settings(); l < want; _, l = settings() {
		select {
		case <-deadline:
			t.Fatalf("limit %d after %v with %d bytes live, want at least %d", l, 10*Interval, len(held), want)
		case <-poll.C:
		}
	}
	runtime.KeepAlive(held)
}
