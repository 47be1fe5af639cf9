// Package urlnorm turns the URLs a crawl meets (seed lines, hrefs, redirects) into one canonical
// form, so that two spellings of the same resource are deduplicated and fetched once, and gives
// each normalised URL its table key.
//
// Normalize accepts absolute http and https URLs only and applies these rules, in order:
//
//   - Surrounding whitespace is trimmed, and ASCII tab, CR and LF inside the URL are removed (as
//     browsers do, so an href wrapped over two lines still works).
//   - A '%' that does not start a valid escape is encoded as %25.
//   - The scheme and host are lower-cased. Only http and https are accepted (class Scope).
//   - An internationalised host is converted to punycode with the idna.Lookup profile; a host that
//     profile rejects (for example one with spaces, or an underscore) is an error (class Parse).
//     A single trailing dot of the host is removed; empty labels and labels over 63 bytes are
//     errors. IPv6 literals are written in their canonical form.
//   - The default port is dropped (:80 for http, :443 for https); other ports lose leading zeros.
//   - The userinfo (user:password@) is dropped: credentials must never be crawled, logged or
//     stored, and the same page is reachable without them.
//   - The fragment is dropped: it never reaches the server.
//   - Percent-encoding is normalised in path and query: hex digits are upper-cased, escapes of
//     unreserved characters (A-Z a-z 0-9 - . _ ~) are decoded, and non-ASCII bytes, spaces and
//     other characters not allowed by RFC 3986 are percent-encoded (non-ASCII text as UTF-8).
//     Escaped reserved characters such as %2F and %3D stay escaped: decoding them would change
//     the meaning.
//   - Session-id path parameters (";jsessionid=..." and the other names below) are removed.
//   - Dot segments ("." and "..") are removed (RFC 3986, section 5.2.4); an empty path becomes "/".
//   - Session-id query parameters are removed: jsessionid, phpsessid, sid, sessionid, and any
//     name starting with aspsessionid (names compared case-insensitively). Empty parameters
//     ("a=1&&b=2") are removed, and an empty query drops its '?'.
//   - The other query parameters keep their order. They are not sorted: servers may read repeated
//     or ordered parameters, so sorting can change what a URL means.
//   - The result is at most MaxLength bytes (class TooLarge). Input longer than 4*MaxLength bytes
//     is refused before parsing.
//
// Normalize is idempotent: normalising a normalised URL's String gives the same URL.
package urlnorm

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/net/idna"
)

// MaxLength is the most bytes a normalised URL may have. Longer URLs are refused with class
// TooLarge; they are almost always traps or junk, and they must fit in messages and records.
const MaxLength = 2048

// maxRawLength bounds the input before any parsing work is done.
const maxRawLength = 4 * MaxLength

// Normalize parses raw as an absolute http or https URL and returns its canonical form (see the
// package documentation for the rules). Errors carry an errclass: Parse for input that is not a
// valid absolute URL, Scope for another scheme, TooLarge for a result over MaxLength.
func Normalize(raw string) (*url.URL, error) {
	s := clean(raw)
	if len(s) > maxRawLength {
		return nil, errclass.Errorf(errclass.TooLarge, "normalize url: %d bytes, over %d", len(s), maxRawLength)
	}
	u, err := url.Parse(fixPercents(s))
	if err != nil {
		return nil, errclass.New(errclass.Parse, fmt.Errorf("normalize url: %w", unwrapURLError(err)))
	}
	return normalizeURL(u, s)
}

// Resolve resolves ref (an href: possibly relative, non-ASCII or padded with whitespace) against
// base, then normalises the result. References with the schemes javascript, mailto, data and tel,
// and any other non-http scheme, give an error of class Scope.
func Resolve(base *url.URL, ref string) (*url.URL, error) {
	if base == nil {
		return nil, errclass.Errorf(errclass.Parse, "resolve %q: nil base url", short(ref))
	}
	s := clean(ref)
	if len(s) > maxRawLength {
		return nil, errclass.Errorf(errclass.TooLarge, "resolve url: %d bytes, over %d", len(s), maxRawLength)
	}
	r, err := url.Parse(fixPercents(s))
	if err != nil {
		return nil, errclass.New(errclass.Parse, fmt.Errorf("resolve url: %w", unwrapURLError(err)))
	}
	switch r.Scheme {
	case "", "http", "https":
	default:
		return nil, errclass.Errorf(errclass.Scope, "resolve %q: scheme %q is not crawled", short(s), r.Scheme)
	}
	return normalizeURL(base.ResolveReference(r), s)
}

// Key returns the table key of a normalised URL: the hex SHA-256 of its string (64 characters).
// Keys are hashes because a DynamoDB partition key is at most 2048 bytes.
func Key(normalized string) string {
	sum := sha256.Sum256([]byte(normalized))
	return hex.EncodeToString(sum[:])
}

// clean trims surrounding whitespace and removes ASCII tab, CR and LF inside.
func clean(s string) string {
	s = strings.TrimSpace(s)
	if strings.ContainsAny(s, "\t\r\n") {
		s = strings.NewReplacer("\t", "", "\r", "", "\n", "").Replace(s)
	}
	return s
}

func normalizeURL(u *url.URL, raw string) (*url.URL, error) {
	switch u.Scheme {
	case "http", "https":
	case "":
		return nil, errclass.Errorf(errclass.Parse, "normalize %q: not an absolute url", short(raw))
	default:
		return nil, errclass.Errorf(errclass.Scope, "normalize %q: scheme %q is not crawled", short(raw), u.Scheme)
	}
	if u.Opaque != "" || u.Host == "" {
		return nil, errclass.Errorf(errclass.Parse, "normalize %q: no host", short(raw))
	}
	host, err := normalizeHost(u.Hostname())
	if err != nil {
		return nil, errclass.New(errclass.Parse, fmt.Errorf("normalize %q: %w", short(raw), err))
	}
	port, err := normalizePort(u.Scheme, u.Port())
	if err != nil {
		return nil, errclass.New(errclass.Parse, fmt.Errorf("normalize %q: %w", short(raw), err))
	}
	if port != "" {
		host += ":" + port
	}
	p := removeDotSegments(stripPathParams(normalizeEscapes(u.EscapedPath(), pathChars)))
	if p == "" || p[0] != '/' {
		p = "/" + p
	}
	path, err := url.PathUnescape(p)
	if err != nil { // cannot happen: p is validly escaped
		return nil, errclass.New(errclass.Internal, fmt.Errorf("normalize %q: %w", short(raw), err))
	}
	out := &url.URL{Scheme: u.Scheme, Host: host, Path: path, RawPath: p, RawQuery: normalizeQuery(u.RawQuery)}
	if n := len(out.String()); n > MaxLength {
		return nil, errclass.Errorf(errclass.TooLarge, "normalize %q: %d bytes, over %d", short(raw), n, MaxLength)
	}
	return out, nil
}

// hostCacheSize bounds the cache of normalised hosts (a few hundred KB at most).
const hostCacheSize = 4096

// hosts caches normalizeHost's results: almost every link of a crawl names a host met a moment
// ago, and the IDNA mapping is the costliest step of normalising a URL.
var hosts = func() *lru.Cache[string, string] {
	c, err := lru.New[string, string](hostCacheSize)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return c
}()

func normalizeHost(h string) (string, error) {
	if a, ok := hosts.Get(h); ok {
		return a, nil
	}
	a, err := mapHost(h)
	if err != nil {
		return "", err
	}
	hosts.Add(h, a)
	return a, nil
}

// mapHost is normalizeHost without the cache.
func mapHost(h string) (string, error) {
	if strings.Contains(h, ":") {
		a, err := netip.ParseAddr(h)
		if err != nil || a.Zone() != "" || !a.Is6() {
			return "", fmt.Errorf("invalid ipv6 host %q", short(h))
		}
		return "[" + a.String() + "]", nil
	}
	h = strings.TrimSuffix(h, ".")
	if h == "" {
		return "", errors.New("empty host")
	}
	if !utf8.ValidString(h) {
		return "", fmt.Errorf("invalid host %q: not utf-8", short(h))
	}
	a, err := idna.Lookup.ToASCII(h)
	if err != nil {
		return "", fmt.Errorf("invalid host %q: %w", short(h), err)
	}
	a = strings.ToLower(a)
	// The punycode form must itself be valid, or normalising the result would fail.
	if again, err := idna.Lookup.ToASCII(a); err != nil || again != a {
		return "", fmt.Errorf("invalid host %q: punycode form %q does not round-trip", short(h), short(a))
	}
	for _, label := range strings.Split(a, ".") {
		if label == "" || len(label) > 63 {
			return "", fmt.Errorf("invalid host %q: empty or over-long label", short(h))
		}
	}
	return a, nil
}

func normalizePort(scheme, port string) (string, error) {
	if port == "" {
		return "", nil
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return "", fmt.Errorf("invalid port %q", short(port))
	}
	if (scheme == "http" && n == 80) || (scheme == "https" && n == 443) {
		return "", nil
	}
	return strconv.Itoa(n), nil
}

// sessionParam reports whether a query or path parameter name (already unescaped) names a
// session id.
func sessionParam(name string) bool {
	switch n := strings.ToLower(name); n {
	case "jsessionid", "phpsessid", "sid", "sessionid":
		return true
	default:
		return strings.HasPrefix(n, "aspsessionid")
	}
}

// stripPathParams removes session-id parameters (";jsessionid=...") from every path segment.
func stripPathParams(p string) string {
	if !strings.Contains(p, ";") {
		return p
	}
	segs := strings.Split(p, "/")
	for i, seg := range segs {
		if !strings.Contains(seg, ";") {
			continue
		}
		params := strings.Split(seg, ";")
		kept := params[:1]
		for _, prm := range params[1:] {
			name, _, _ := strings.Cut(prm, "=")
			if un, err := url.PathUnescape(name); err == nil && sessionParam(un) {
				continue
			}
			kept = append(kept, prm)
		}
		segs[i] = strings.Join(kept, ";")
	}
	return strings.Join(segs, "/")
}

func normalizeQuery(q string) string {
	if q == "" {
		return ""
	}
	var kept []string
	for _, part := range strings.Split(q, "&") {
		if part == "" {
			continue
		}
		name, _, _ := strings.Cut(part, "=")
		if un, err := url.QueryUnescape(name); err == nil && sessionParam(un) {
			continue
		}
		kept = append(kept, normalizeEscapes(part, queryChars))
	}
	return strings.Join(kept, "&")
}

// removeDotSegments is the algorithm of RFC 3986, section 5.2.4, on an escaped path.
func removeDotSegments(p string) string {
	if !strings.Contains(p, ".") {
		return p
	}
	segs := strings.Split(p, "/")
	out := make([]string, 0, len(segs))
	for i, seg := range segs {
		last := i == len(segs)-1
		switch seg {
		case ".":
			if last {
				out = append(out, "")
			}
		case "..":
			if len(out) > 1 { // out[0] is the empty segment before the leading slash
				out = out[:len(out)-1]
			}
			if last {
				out = append(out, "")
			}
		default:
			out = append(out, seg)
		}
	}
	return strings.Join(out, "/")
}

// Redact returns s with the userinfo (user:password@) of its authority removed, for error
// messages and logs: credentials must not be logged or stored. It works on strings that are not
// valid URLs too.
func Redact(s string) string {
	if u, err := url.Parse(s); err == nil {
		if u.User == nil {
			return s
		}
		u.User = nil
		return u.String()
	}
	i := strings.Index(s, "//")
	if i < 0 {
		return s
	}
	rest := s[i+2:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	if j := strings.LastIndex(rest[:end], "@"); j >= 0 {
		return s[:i+2] + rest[j+1:]
	}
	return s
}

// short redacts s and cuts it to a length fit for an error message.
func short(s string) string {
	const max = 200
	s = Redact(s)
	if len(s) <= max {
		return s
	}
	return strings.ToValidUTF8(s[:max], "") + "..."
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}
