package httpfetch

import (
	"context"
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

func (it *idleTimer) wrap(r io.Reader) io.Reader { return &idleReader{r: r, it: it} }

type idleReader struct {
	r  io.Reader
	it *idleTimer
}

func (ir *idleReader) Read(p []byte) (int, error) {
	ir.it.t.Reset(ir.it.d)
	n, err := ir.r.Read(p)
	ir.it.t.Stop()
	return n, err
}
