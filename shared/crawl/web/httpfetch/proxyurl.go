package httpfetch

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// ParseProxy checks a proxy's URL strictly: scheme://[user:password@]host:port[/], with the
// scheme http, https or socks5, a port from 1 to 65535, and nothing else: no fragment, no query,
// no path but "/", at most one "@", no space or control character. A password with one of
// "@:/?#" or a space in it must be percent-encoded (url.UserPassword's String does it).
//
// net/url alone is too lenient here: "http://bob:12#pw@proxy:3128" parses as host bob, port 12
// with the rest a fragment, so a password would travel unnoticed into a setting, a log line or an
// error. Its errors never hold the raw string or any of its userinfo: they name the scheme, the
// host and the port, as far as they can be told apart from the credentials, and nothing more.
func ParseProxy(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	name := proxyName(raw)
	bad := func(why string) error { return fmt.Errorf("proxy %s: %s", name, why) }
	scheme, rest, ok := strings.Cut(raw, "://")
	switch {
	case !ok:
		return nil, bad("not a URL of the form scheme://[user:password@]host:port")
	case scheme != "http" && scheme != "https" && scheme != "socks5":
		return nil, bad("want an http://, https:// or socks5:// URL")
	case strings.ContainsFunc(raw, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return nil, bad("a space or control character in the URL (percent-encode it in a password)")
	case strings.Contains(rest, "#"):
		return nil, bad("a fragment (#) in the URL: percent-encode a # in a password as %23")
	case strings.Contains(rest, "?"):
		return nil, bad("a query (?) in the URL: percent-encode a ? in a password as %3F")
	case strings.Count(rest, "@") > 1:
		return nil, bad("more than one @ in the URL: percent-encode an @ in a password as %40")
	}
	authority, path, _ := strings.Cut(rest, "/")
	if path != "" {
		return nil, bad("a path in the URL: want scheme://[user:password@]host:port (percent-encode a / in a password as %2F)")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, bad("not a valid URL") // url's error would quote the password
	}
	hostport := authority[strings.LastIndex(authority, "@")+1:]
	if u.Host != hostport || u.Hostname() == "" {
		return nil, bad("want scheme://[user:password@]host:port")
	}
	if n, err := strconv.Atoi(u.Port()); err != nil || n < 1 || n > 65535 {
		return nil, bad("want scheme://[user:password@]host:port, with a port from 1 to 65535")
	}
	return u, nil
}

// proxyName is what an error may say of a proxy URL: its scheme when it is a short lower-case word,
// and the host and port after the last "@" (or the whole authority when there is none), each only
// when it is plainly a host name, an IP address or a port number. Whatever might be part of a
// password is left out.
func proxyName(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return "(not a URL)"
	}
	if len(scheme) > 10 || strings.ContainsFunc(scheme, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') }) {
		scheme = "?"
	}
	hostport := rest[strings.LastIndex(rest, "@")+1:]
	if i := strings.IndexAny(hostport, "/?# \t\r\n"); i >= 0 {
		hostport = hostport[:i]
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	if !plainHost(host) {
		host = "?"
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
		port = "?"
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return scheme + "://" + host + ":" + port
}

// plainHost reports whether h reads as a host name or an IP address, and nothing else.
func plainHost(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	if net.ParseIP(h) != nil {
		return true
	}
	return !strings.ContainsFunc(h, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_')
	})
}
