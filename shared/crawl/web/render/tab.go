package render

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/andybalholm/cascadia"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// Timings of a render (docs/render.md).
const (
	// NetworkQuiet is how long no sub-request may have been in flight, and the document
	// loaded, before Wait.NetworkIdle is met.
	NetworkQuiet = 500 * time.Millisecond
	// pollEvery is how often the waits look at the page.
	pollEvery = 50 * time.Millisecond
	// captureTimeout bounds the DOM's capture once the wait is over (a page whose script never
	// yields cannot be captured: the render fails).
	captureTimeout = 5 * time.Second
)

// Render runs req.Page's scripts in a new tab and returns the DOM they built. The tab's main
// document is answered from req.Page (the host is not asked again); every other request the page
// makes goes through the checks of intercept.go and, when admitted, through req.Loader. The page
// is taken when a condition of req.Wait is met (neither set: network idle), at req.Wait.Max at
// the latest (Result.TimedOut). Render is safe for concurrent use; each call has its own tab in
// a browser context of its own. Its errors: a bad Request (before the browser is asked), the
// browser gone, the DOM not captured, or ctx done.
func (c *Chromium) Render(ctx context.Context, req Request) (Result, error) {
	start := time.Now()
	s, err := newSession(req)
	if err != nil {
		return Result{}, err
	}
	if c.browser.Err() != nil {
		return Result{}, errors.New("render: the browser is closed")
	}
	tab, cancelTab := chromedp.NewContext(c.browser, chromedp.WithNewBrowserContext())
	defer cancelTab()
	stop := context.AfterFunc(ctx, cancelTab)
	defer stop()

	paused := chromedp.Events(tab, fetch.RequestPaused) // opens the tab
	t, err := chromedp.Run(tab, func(_ context.Context, t *chromedp.Target) (*chromedp.Target, error) { return t, nil })
	if err != nil {
		return Result{}, c.failed(ctx, fmt.Errorf("render %s: open a tab: %w", req.Page.URL, err))
	}
	s.intercept(tab, t, paused)
	defer s.wait.Wait() // after cancelTab (deferred before it runs): the handlers see their context end
	defer cancelTab()

	if err := prepare(tab, t); err != nil {
		return Result{}, c.failed(ctx, fmt.Errorf("render %s: %w", req.Page.URL, err))
	}
	s.touch()
	nav, err := cdp.Call(tab, t, page.Navigate, page.NavigateParams{URL: req.Page.URL})
	switch {
	case err != nil:
		return Result{}, c.failed(ctx, fmt.Errorf("render %s: navigate: %w", req.Page.URL, err))
	case nav.ErrorText != "":
		return Result{}, fmt.Errorf("render %s: navigate: %s", req.Page.URL, nav.ErrorText)
	}
	timedOut, err := s.waitFor(tab, t, req.Wait)
	if err != nil {
		return Result{}, c.failed(ctx, fmt.Errorf("render %s: %w", req.Page.URL, err))
	}
	cctx, cancel := context.WithTimeout(tab, captureTimeout)
	defer cancel()
	dom, err := chromedp.Run(cctx, chromedp.Evaluate[string](`"<!DOCTYPE html>" + document.documentElement.outerHTML`))
	if err != nil {
		return Result{}, c.failed(ctx, fmt.Errorf("render %s: capture the DOM: %w", req.Page.URL, err))
	}
	took := time.Since(start)
	cancelTab()
	s.wait.Wait()
	return Result{DOM: []byte(dom), SubRequests: s.done(), TimedOut: timedOut, Took: took}, nil
}

// failed prefers the caller's context error (it ended the tab) to the browser's error about it.
func (c *Chromium) failed(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("%w (%w)", cerr, err)
	}
	return err
}

// prepare turns the interception on for every request of the tab, and has the page's own
// requests skip any service worker (so they all come to the interception).
func prepare(ctx context.Context, t *chromedp.Target) error {
	if _, err := cdp.Call(ctx, t, network.SetBypassServiceWorker, network.SetBypassServiceWorkerParams{Bypass: true}); err != nil {
		return fmt.Errorf("bypass service workers: %w", err)
	}
	patterns := []*fetch.RequestPattern{{URLPattern: "*", RequestStage: fetch.RequestStageRequest}}
	if _, err := cdp.Call(ctx, t, fetch.Enable, fetch.EnableParams{Patterns: patterns}); err != nil {
		return fmt.Errorf("intercept requests: %w", err)
	}
	return nil
}

// checkRequest refuses a Request the browser cannot render, before a tab is opened.
func checkRequest(req Request) error {
	u, err := url.Parse(req.Page.URL)
	switch {
	case err != nil:
		return fmt.Errorf("render: page URL %q: %w", req.Page.URL, err)
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		return fmt.Errorf("render: page URL %q: want an absolute http or https URL", req.Page.URL)
	case req.Loader == nil:
		return errors.New("render: no Loader: the page's sub-requests would have no way out")
	case req.Wait.Max < 0:
		return fmt.Errorf("render: wait max %s: must not be negative", req.Wait.Max)
	case req.Limits.MaxRequests < 0:
		return fmt.Errorf("render: max requests %d: must not be negative", req.Limits.MaxRequests)
	case req.Limits.MaxBytes < 0:
		return fmt.Errorf("render: max bytes %d: must not be negative", req.Limits.MaxBytes)
	}
	if req.Wait.Selector != "" {
		if _, err := cascadia.Compile(req.Wait.Selector); err != nil {
			return fmt.Errorf("render: wait selector %q: %w", req.Wait.Selector, err)
		}
	}
	return nil
}

// pageState is what a poll of the page reads.
type pageState struct {
	Ready bool `json:"ready"` // document.readyState is "complete": the load event has fired
	Found bool `json:"found"` // Wait.Selector matches an element
}

// waitFor polls the page until a condition of w is met, or w.Max passes (timedOut).
func (s *session) waitFor(ctx context.Context, t *chromedp.Target, w Wait) (timedOut bool, err error) {
	idle := w.NetworkIdle || w.Selector == ""
	found := "false"
	if w.Selector != "" {
		q, _ := json.Marshal(w.Selector)
		found = fmt.Sprintf("document.querySelector(%s) !== null", q)
	}
	expr := `({ready: document.readyState === "complete", found: ` + found + `})`
	wctx, cancel := context.WithTimeout(ctx, cmp.Or(w.Max, DefaultMaxWait))
	defer cancel()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	var loaded time.Time // when the document was first seen loaded: the quiet counts from there
	for {
		st, err := chromedp.Run(wctx, chromedp.Evaluate[pageState](expr))
		switch {
		case wctx.Err() != nil && ctx.Err() == nil:
			return true, nil
		case err != nil:
			return false, fmt.Errorf("wait: %w", err)
		case st.Found:
			return false, nil
		case st.Ready && loaded.IsZero():
			loaded = time.Now()
		}
		if idle && !loaded.IsZero() && min(s.quiet(), time.Since(loaded)) >= NetworkQuiet {
			return false, nil
		}
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return false, fmt.Errorf("wait: %w", ctx.Err())
			}
			return true, nil
		case <-tick.C:
		}
	}
}
