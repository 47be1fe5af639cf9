// Package render runs a stored page's scripts in a headless browser and returns the DOM they
// build, for pages whose content or links exist only after JavaScript runs.
//
// The browser never fetches the page itself again: its main document is answered from the
// response that fetch already stored (after robots, politeness, claims and the SSRF guard). Every
// other request the page makes (scripts, XHR, stylesheets) goes through the caller's Loader, which
// applies the same guard, scope and robots rules as a fetch, or is refused.
package render

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// ErrNoBrowser is returned when no browser can be started (for example Chromium is not
// installed). A crawl that asks for rendering says so clearly and renders nothing.
var ErrNoBrowser = errors.New("render: no browser")

// Page is the stored response whose scripts run: the browser's main document.
type Page struct {
	// URL is the document's final URL (after redirects): scripts see it as location.href, and
	// relative sub-requests resolve against it.
	URL    string
	Status int
	Header http.Header
	Body   []byte
}

// Wait says when a rendered page is done. The page is taken when any condition set is met, and
// at Max at the latest.
type Wait struct {
	// NetworkIdle: no sub-request in flight for a short quiet period.
	NetworkIdle bool
	// Selector: a CSS selector that appears in the DOM.
	Selector string
	// Max caps the time from the document's load; zero means DefaultMaxWait.
	Max time.Duration
}

// DefaultMaxWait caps a render when the crawl gives no cap of its own.
const DefaultMaxWait = 10 * time.Second

// Limits bound what one page may cost.
type Limits struct {
	// MaxRequests caps the sub-requests a page may make; later ones are refused. Zero means
	// DefaultMaxRequests.
	MaxRequests int
	// MaxBytes caps the bytes of all sub-request bodies together. Zero means DefaultMaxBytes.
	MaxBytes int64
	// Load lists resource types loaded although they are blocked by default ("image", "media",
	// "font"); see DefaultBlocked.
	Load []string
}

// Defaults for Limits.
const (
	DefaultMaxRequests       = 100
	DefaultMaxBytes    int64 = 10 << 20
)

// DefaultBlocked are the resource types (as the Chrome DevTools Protocol names them, lowercased)
// refused unless Limits.Load names them.
var DefaultBlocked = []string{"image", "media", "font"}

// Loader makes a sub-request for the browser. It applies the SSRF guard, the crawl's scope and
// robots.txt, and returns an error instead of a response when the request may not be made.
type Loader interface {
	Load(ctx context.Context, req *http.Request) (*http.Response, error)
}

// Request is one page to render.
type Request struct {
	Page   Page
	Wait   Wait
	Limits Limits
	Loader Loader
}

// SubRequest is one request the page made while it rendered.
type SubRequest struct {
	URL string
	// Type is the resource type (for example "script", "xhr", "fetch", "image").
	Type string
	// Status is the response's status code when it was loaded.
	Status int
	// Refused says why it was not loaded ("blocked type", "over the request cap", or the
	// Loader's error); empty when it was.
	Refused string
}

// Result is what a render yields.
type Result struct {
	// DOM is the document serialized after scripts ran (document.documentElement.outerHTML with
	// its doctype), as UTF-8 HTML.
	DOM         []byte
	SubRequests []SubRequest
	// TimedOut: Wait.Max passed before any other condition was met; DOM is the document then.
	TimedOut bool
	// Took is the time from the start of the render to the DOM's capture.
	Took time.Duration
}
