package httpfetch

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"
)

// idleTimer cancels a request when a body read waits longer than its limit, so that a server
// sending one byte every few seconds cannot hold a worker until the total timeout.
type idleTimer struct {
	d     time.Duration
	t     *time.Timer
	fired atomic.Bool
	// minRate and after: a body read at fewer than minRate bytes a second on average, once after
	// has passed since its first read, is cut off (0: never).
	minRate int64
	after   time.Duration
}

// tooSlow is the error of a body cut off for its rate.
type tooSlow struct {
	n       int64
	elapsed time.Duration
	min     int64
}

func (e *tooSlow) Error() string {
	return fmt.Sprintf("the body came in at %d bytes/s over %s, below %d bytes/s", int64(float64(e.n)/e.elapsed.Seconds()),
		e.elapsed.Round(time.Millisecond), e.min)
}

func newIdleTimer(d time.Duration, cancel context.CancelFunc) *idleTimer {
	it := &idleTimer{d: d}
	it.t = time.AfterFunc(time.Hour, func() {
		it.fired.Store(true)
		cancel()
	})
	it.t.Stop()
	return it
}

func (it *idleTimer) stop() { it.t.Stop() }

func (it *idleTimer) wrap(r io.Reader) *idleReader { return &idleReader{r: r, it: it} }

type idleReader struct {
	r     io.Reader
	it    *idleTimer
	start time.Time // the first read
	n     int64     // bytes read
}

func (ir *idleReader) Read(p []byte) (int, error) {
	if ir.start.IsZero() {
		ir.start = time.Now()
	}
	ir.it.t.Reset(ir.it.d)
	n, err := ir.r.Read(p)
	ir.it.t.Stop()
	ir.n += int64(n)
	if err == nil && ir.it.minRate > 0 {
		if el := time.Since(ir.start); el >= ir.it.after && float64(ir.n) < float64(ir.it.minRate)*el.Seconds() {
			return n, &tooSlow{n: ir.n, elapsed: el, min: ir.it.minRate}
		}
	}
	return n, err
}
