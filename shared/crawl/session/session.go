// Package session keeps the cookies a host sets during a crawl, so that a session (a consent
// cookie, a login) lasts across fetch invocations: one jar per crawl and host, stored in the crawl
// state between invocations (crawlstate.Sessions) and read at the start of the next batch that
// fetches from the host. It is on for the hosts whose rule asks for it (a spec's hosts entry with
// `session: true`); other hosts keep no cookies and the crawl writes nothing more for them.
//
// The cookies' semantics are net/http's: net/http parses each answer's Set-Cookie headers (on every
// redirect hop) and hands them to the jar, and net/http/cookiejar decides which cookies a request
// carries (domain, path, secure, expiry). This package only keeps what a jar holds in a form that
// can be stored, and merges the changes of two invocations that saved at once.
//
// Cookies are secrets: no error or log line of this package holds a value.
package session

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Bounds on one host's jar, so that its stored item stays far under DynamoDB's 400 KB: at most
// MaxCookies cookies, each at most MaxCookieBytes of name and value (a browser's bound). A cookie
// over either bound is not kept (Jar.Dropped counts it).
const (
	MaxCookies     = 50
	MaxCookieBytes = 4096
)

// Cookie is one stored cookie: what net/http/cookiejar needs to match it again.
type Cookie struct {
	Name  string `json:"n"`
	Value string `json:"v"`
	// Domain is the Domain attribute, lower case without its leading dot ("": a host-only cookie).
	Domain string `json:"d,omitempty"`
	// Path is the cookie's path: its Path attribute, or the default path of the URL that set it.
	Path string `json:"p"`
	// Expires is when it expires, in Unix seconds (0: at the end of the crawl).
	Expires  int64 `json:"e,omitempty"`
	Secure   bool  `json:"s,omitempty"`
	HTTPOnly bool  `json:"h,omitempty"`
}

// id is what names a cookie in a jar: a later one with the same id replaces it (RFC 6265 5.3).
func (c Cookie) id() string { return c.Name + ";" + c.Domain + ";" + c.Path }

// String names the cookie without its value, for logs and errors.
func (c Cookie) String() string {
	return fmt.Sprintf("cookie %q (domain %q, path %q)", c.Name, c.Domain, c.Path)
}

// Change is one Set-Cookie an answer gave: a cookie set, replaced, or (Gone) removed.
type Change struct {
	Cookie Cookie
	Gone   bool
}

// Learn turns the cookies an answer to u set into changes, as of now. A cookie with Max-Age < 0
// or an Expires in the past removes its like.
func Learn(u *url.URL, set []*http.Cookie, now time.Time) []Change {
	out := make([]Change, 0, len(set))
	for _, hc := range set {
		c := Cookie{Name: hc.Name, Value: hc.Value, Domain: strings.ToLower(strings.TrimPrefix(hc.Domain, ".")),
			Path: hc.Path, Secure: hc.Secure, HTTPOnly: hc.HttpOnly}
		if c.Path == "" || c.Path[0] != '/' {
			c.Path = defaultPath(u.Path)
		}
		gone := false
		switch {
		case hc.MaxAge < 0:
			gone = true
		case hc.MaxAge > 0:
			c.Expires = now.Add(time.Duration(hc.MaxAge) * time.Second).Unix()
		case !hc.Expires.IsZero():
			c.Expires = hc.Expires.Unix()
			gone = !hc.Expires.After(now)
		}
		out = append(out, Change{Cookie: c, Gone: gone})
	}
	return out
}

// defaultPath is RFC 6265 5.1.4's default path of a request path: up to its last '/'.
func defaultPath(p string) string {
	i := strings.LastIndex(p, "/")
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// Apply returns cookies with changes applied in order, without those expired at now, and how many
// cookies it did not keep for the bounds (MaxCookies, MaxCookieBytes). cookies is not changed.
func Apply(cookies []Cookie, changes []Change, now time.Time) (out []Cookie, dropped int) {
	out = slices.DeleteFunc(slices.Clone(cookies), func(c Cookie) bool { return expired(c, now) })
	for _, ch := range changes {
		i := slices.IndexFunc(out, func(c Cookie) bool { return c.id() == ch.Cookie.id() })
		switch {
		case ch.Gone || expired(ch.Cookie, now):
			if i >= 0 {
				out = slices.Delete(out, i, i+1)
			}
		case len(ch.Cookie.Name)+len(ch.Cookie.Value) > MaxCookieBytes:
			dropped++
		case i >= 0:
			out[i] = ch.Cookie
		case len(out) >= MaxCookies:
			dropped++
		default:
			out = append(out, ch.Cookie)
		}
	}
	return out, dropped
}

func expired(c Cookie, now time.Time) bool { return c.Expires != 0 && c.Expires <= now.Unix() }

// Same says whether two jars hold the same cookies, in any order.
func Same(a, b []Cookie) bool {
	if len(a) != len(b) {
		return false
	}
	for _, c := range a {
		if !slices.Contains(b, c) {
			return false
		}
	}
	return true
}

// Encode is the stored form of a jar's cookies.
func Encode(cookies []Cookie) (string, error) {
	b, err := json.Marshal(cookies)
	if err != nil {
		return "", fmt.Errorf("encode a cookie jar: %w", err)
	}
	return string(b), nil
}

// Decode reads a jar's stored cookies ("" holds none).
func Decode(s string) ([]Cookie, error) {
	if s == "" {
		return nil, nil
	}
	var out []Cookie
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, fmt.Errorf("decode a stored cookie jar: %w", err) // json's errors hold no value
	}
	return out, nil
}

// matcher is a net/http/cookiejar holding cookies set from host, to match requests against.
func matcher(host string, cookies []Cookie) (*cookiejar.Jar, error) {
	j, err := cookiejar.New(nil)
	if err != nil {
		return nil, fmt.Errorf("new cookie jar: %w", err)
	}
	if len(cookies) == 0 {
		return j, nil
	}
	hcs := make([]*http.Cookie, 0, len(cookies))
	for _, c := range cookies {
		hc := &http.Cookie{Name: c.Name, Value: c.Value, Domain: c.Domain, Path: c.Path, Secure: c.Secure, HttpOnly: c.HTTPOnly}
		if c.Expires != 0 {
			hc.Expires = time.Unix(c.Expires, 0)
		}
		hcs = append(hcs, hc)
	}
	j.SetCookies(&url.URL{Scheme: "https", Host: host, Path: "/"}, hcs)
	return j, nil
}
