package render

import (
	"context"
	"errors"
	"sync"
)

// OnDemand is a Chromium started by its first Render, so that a process that may render (a
// crawl run whose spec could ask for it) starts no browser until a page needs one. A browser
// that does not start fails that Render and every later one with the same error, which wraps
// ErrNoBrowser: it is not tried again. It is safe for concurrent use.
type OnDemand struct {
	opts Options

	mu      sync.Mutex
	browser *Chromium
	err     error // the start's error, once it failed
	closed  bool
}

// NewOnDemand returns an OnDemand that starts its browser with opts.
func NewOnDemand(opts Options) *OnDemand { return &OnDemand{opts: opts} }

// Render starts the browser when it has not started yet, then renders req as Chromium.Render.
func (o *OnDemand) Render(ctx context.Context, req Request) (Result, error) {
	c, err := o.start()
	if err != nil {
		return Result{}, err
	}
	return c.Render(ctx, req)
}

func (o *OnDemand) start() (*Chromium, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case o.closed:
		return nil, errors.New("render: the browser is closed")
	case o.browser != nil || o.err != nil:
		return o.browser, o.err
	}
	o.browser, o.err = NewChromium(o.opts)
	return o.browser, o.err
}

// Started reports whether the browser has been started (and not failed to).
func (o *OnDemand) Started() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.browser != nil
}

// Close stops the browser when it was started. Later Renders fail.
func (o *OnDemand) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	if o.browser == nil {
		return nil
	}
	return o.browser.Close()
}
