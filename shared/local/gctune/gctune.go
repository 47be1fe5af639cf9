// Package gctune trades some memory for less garbage-collection CPU in a long crawl on one
// machine. Go's collector runs each time the heap has grown by GOGC percent (100 by default) over
// what the last collection found live; a crawl allocates fast (pages, WARC records, link lists)
// and holds little, so it collects often. Start raises the percentage to Percent and caps the
// heap with a soft memory limit that is never under Floor, nor under twice the live heap (plus
// Slack): a small heap grows by up to Percent percent, and a heap too large for the floor is
// collected about as often as with GOGC=100, not more. The limit follows the live heap as it
// grows, checked every Interval.
package gctune

import (
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// The settings. A crawl of 100,000 pages on the embedded backend keeps its peak RSS under 150 MiB
// with them (docs/bench-history.md, round fifteen).
const (
	Percent  = 200
	Floor    = 96 << 20
	Slack    = 16 << 20
	Interval = time.Second
)

// liveMetric is the heap the last collection found live.
const liveMetric = "/gc/heap/live:bytes"

// Limit is the memory limit for a live heap of live bytes: Floor, or twice the live heap and Slack
// when that is more.
func Limit(live uint64) int64 {
	return max(Floor, int64(min(live, math.MaxInt64/4))*2+Slack)
}

// Start sets the collector's percentage and limit, unless the GOGC or GOMEMLIMIT environment
// variable sets either (the user's choice stands), and keeps the limit up to date until stop is
// called. stop restores the settings from before and returns when the updates have ended. Runs in
// one process (tests) share one tuning: the last stop restores.
func Start() (stop func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	tuned.Lock()
	defer tuned.Unlock()
	if tuned.users++; tuned.users == 1 {
		tuned.wasLimit = debug.SetMemoryLimit(Limit(live()))
		tuned.wasPercent = debug.SetGCPercent(Percent)
		tuned.quit, tuned.done = make(chan struct{}), make(chan struct{})
		go follow(tuned.quit, tuned.done)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			tuned.Lock()
			defer tuned.Unlock()
			if tuned.users--; tuned.users == 0 {
				close(tuned.quit)
				<-tuned.done
				debug.SetGCPercent(tuned.wasPercent)
				debug.SetMemoryLimit(tuned.wasLimit)
			}
		})
	}
}

// tuned counts the runs sharing the tuning, and keeps the settings from before it.
var tuned struct {
	sync.Mutex
	users      int
	wasLimit   int64
	wasPercent int
	quit, done chan struct{}
}

// follow sets the limit for the live heap every Interval until quit closes, then closes done.
func follow(quit <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(Interval)
	defer tick.Stop()
	for {
		select {
		case <-quit:
			return
		case <-tick.C:
			debug.SetMemoryLimit(Limit(live()))
		}
	}
}

// live reads the live heap's size.
func live() uint64 {
	s := []metrics.Sample{{Name: liveMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0 // not in this Go release: the floor holds
	}
	return s[0].Value.Uint64()
}
