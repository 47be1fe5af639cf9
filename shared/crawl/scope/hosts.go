package scope

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"
)

// HostPattern matches hosts by name: "shop.example.com" is that host on any port,
// "*.example.com" any of its subdomains (not example.com itself), and a pattern with a port,
// such as "127.0.0.1:8080", that host on that port only. The wildcards are path.Match's (*, ?
// and [...]), matched case-insensitively against the URL's host name, or its host and port.
type HostPattern string

// ParseHostPattern checks a host pattern: one host name or wildcard pattern, with an optional
// port, and nothing else (no scheme, path or user).
func ParseHostPattern(s string) (HostPattern, error) {
	p := strings.ToLower(strings.TrimSpace(s))
	switch {
	case p == "":
		return "", errors.New("empty host pattern")
	case strings.ContainsAny(p, "/@ \t"):
		return "", fmt.Errorf("%q: want a host name or pattern such as shop.example.com or *.example.com, with no scheme or path", s)
	}
	if _, err := path.Match(p, ""); err != nil {
		return "", fmt.Errorf("%q: %w", s, err)
	}
	return HostPattern(p), nil
}

// Match says whether host, a URL's host with its optional port (url.URL.Host), matches p: a
// pattern without a colon is matched against the host name alone, one with a colon against the
// host and port (an IPv6 host is written in brackets with its port, "[::1]:8080").
func (p HostPattern) Match(host string) bool {
	host = strings.ToLower(host)
	if !strings.Contains(string(p), ":") {
		host = (&url.URL{Host: host}).Hostname()
	}
	if string(p) == host {
		return true // "[::1]:8080" is no character class here
	}
	ok, err := path.Match(string(p), host)
	return err == nil && ok
}

// HostDepth is a depth bound of the hosts a pattern matches, over the crawl's MaxDepth.
type HostDepth struct {
	Pattern  HostPattern
	MaxDepth int
}

// DepthFor is the most link hops from the seed that a URL on host may be: the first HostDepth
// that matches it, or MaxDepth (negative: no limit).
func (r Rules) DepthFor(host string) int {
	for _, h := range r.HostDepths {
		if h.Pattern.Match(host) {
			return h.MaxDepth
		}
	}
	return r.MaxDepth
}

// Deepest is the deepest any URL of the crawl may be, on any host (negative: no limit): a
// page's links go no deeper, whatever their hosts.
func (r Rules) Deepest() int {
	d := r.MaxDepth
	for _, h := range r.HostDepths {
		if d < 0 || h.MaxDepth < 0 {
			return -1
		}
		d = max(d, h.MaxDepth)
	}
	return d
}
