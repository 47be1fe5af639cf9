// Package errclass names the classes of failure that the crawler records for every URL and counts
// in its summaries. The class decides what happens next: retry (transient) or a terminal state
// (permanent). It is a leaf package: every other package may import it.
package errclass

import (
	"errors"
	"fmt"
)

// Class is an error class, as recorded in the table and counted in summaries.
type Class string

// The error classes. Transient ones are retried; the rest end the URL in a terminal state.
const (
	DNS      Class = "dns"       // the name does not resolve (NXDOMAIN is permanent)
	Connect  Class = "connect"   // connection refused or reset
	TLS      Class = "tls"       // handshake or certificate failure
	Timeout  Class = "timeout"   // a header, read or total deadline passed
	HTTP4xx  Class = "http_4xx"  // a 4xx status other than 408 and 429
	HTTP429  Class = "http_429"  // 429 Too Many Requests (and 408)
	HTTP5xx  Class = "http_5xx"  // a 5xx status
	TooLarge Class = "too_large" // a body, decompressed body, header or URL over its limit
	Robots   Class = "robots"    // disallowed by robots.txt
	// RobotsUnavailable: the host's robots.txt stayed unreachable (5xx, 429, no connection)
	// through every try the retry policy allows, so its URLs were skipped; a recrawl tries again.
	RobotsUnavailable Class = "robots_unavailable"
	Scope             Class = "scope"     // outside the crawl's scope, depth or budget
	Trap              Class = "trap"      // looks like a spider trap
	SSRF              Class = "ssrf"      // a non-public address, scheme or port that is not allowed
	Parse             Class = "parse"     // the page or a message could not be parsed
	Type              Class = "type"      // a content type the crawler does not parse
	Redirect          Class = "redirect"  // too many redirects, or a redirect loop
	Dup               Class = "duplicate" // the page was fetched already under another URL (a redirect target)
	Poison            Class = "poison"    // a malformed queue message, quarantined
	Budget            Class = "budget"    // a link not admitted: the crawl's pages (max pages) or money budget are used up
	Stopped           Class = "stopped"   // a URL left unfetched, or a link not admitted: the crawl was stopped
	OptedOut          Class = "opted_out" // on the opt-out list: its owner asked not to be crawled, or its page was purged
	// PageGone is a page that parse cannot read back: its WARC file was purged, or expired by the
	// bucket's lifecycle, before its parse message was handled. Not retried: the page is gone.
	PageGone Class = "page_gone"
	// Login is a URL of a host whose login failed (a refused login, its secrets unread, or its
	// rule's max_logins used up): its session is not open.
	Login    Class = "login_failed"
	Internal Class = "internal" // a bug or a backend failure: retried
)

// All lists every class, in a stable order for summaries.
var All = []Class{DNS, Connect, TLS, Timeout, HTTP4xx, HTTP429, HTTP5xx, TooLarge, Robots, RobotsUnavailable,
	Scope, Trap, SSRF, Parse, Type, Redirect, Dup, Poison, Budget, Stopped, OptedOut, PageGone, Login, Internal}

// Error is an error with a class.
type Error struct {
	Class Class
	Err   error
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %v", e.Class, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// New wraps err with class c. A nil err gives nil.
func New(c Class, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Class: c, Err: err}
}

// Errorf is New with a formatted error.
func Errorf(c Class, format string, args ...any) error {
	return &Error{Class: c, Err: fmt.Errorf(format, args...)}
}

// Of returns the class of err: the outermost *Error's class, or Internal when err has none.
// Of(nil) is "".
func Of(err error) Class {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	return Internal
}

// Retryable reports whether a failure of class c may succeed if tried again.
func Retryable(c Class) bool {
	switch c {
	case Connect, Timeout, HTTP429, HTTP5xx, Internal:
		return true
	}
	return false
}

// FromStatus returns the class of an HTTP status code, or "" for 1xx, 2xx and 3xx.
func FromStatus(code int) Class {
	switch {
	case code == 408 || code == 429:
		return HTTP429
	case code >= 400 && code < 500:
		return HTTP4xx
	case code >= 500:
		return HTTP5xx
	}
	return ""
}
