// Package netguard keeps the crawler away from non-public addresses (SSRF protection).
//
// A Guard is checked twice: CheckURL looks at a URL before any request is made (scheme, port,
// literal and numeric host forms), and Control runs inside net.Dialer.Control on every resolved
// IP, just before the connect, so DNS rebinding and redirects to internal names are caught too.
// Addresses inside an explicit allow-list (for tests and local runs) pass both checks on any port.
package netguard

import (
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"

	whatwg "github.com/nlnwa/whatwg-url/url"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
)

// DefaultPorts are the ports a public address may be fetched on when New is given nil.
var DefaultPorts = []int{80, 443}

// blocked lists every range that is not a public unicast destination: every entry of IANA's IPv4
// and IPv6 Special-Purpose Address Registries that is not globally reachable, and the forms of
// IPv6 that embed an IPv4 address (mapped, translated, compatible, NAT64, 6to4, Teredo). IPv4-mapped
// IPv6 addresses are unmapped before the check, so ::ffff:127.0.0.1 is caught by 127.0.0.0/8.
// TestIsPublicAgreesWithNetip holds it to net/netip's own classification as well.
var blocked = mustPrefixes(
	// IPv4
	"0.0.0.0/8",       // "this network", includes the unspecified address
	"10.0.0.0/8",      // private (RFC 1918)
	"100.64.0.0/10",   // carrier-grade NAT (RFC 6598)
	"127.0.0.0/8",     // loopback
	"169.254.0.0/16",  // link-local, includes the cloud metadata address 169.254.169.254
	"172.16.0.0/12",   // private (RFC 1918)
	"192.0.0.0/24",    // IETF protocol assignments
	"192.0.2.0/24",    // documentation (TEST-NET-1)
	"192.88.99.0/24",  // 6to4 relay anycast (deprecated)
	"192.168.0.0/16",  // private (RFC 1918)
	"198.18.0.0/15",   // benchmarking
	"198.51.100.0/24", // documentation (TEST-NET-2)
	"203.0.113.0/24",  // documentation (TEST-NET-3)
	"224.0.0.0/4",     // multicast
	"240.0.0.0/4",     // reserved, includes broadcast 255.255.255.255
	// IPv6
	"::/96",           // unspecified, loopback and deprecated IPv4-compatible addresses
	"::ffff:0:0/96",   // IPv4-mapped (only reached if unmapping failed; kept as a backstop)
	"::ffff:0:0:0/96", // IPv4-translated (SIIT, RFC 2765): embeds an IPv4 address a translator would reach
	"64:ff9b::/96",    // NAT64: embeds an IPv4 address the gateway would reach
	"64:ff9b:1::/48",
	"100::/64",       // discard-only
	"100:0:0:1::/64", // dummy prefix (RFC 9780)
	"2001::/23",      // IETF protocol assignments, includes Teredo
	"2001:db8::/32",  // documentation
	"2002::/16",      // 6to4: embeds an IPv4 address
	"3fff::/20",      // documentation (RFC 9637)
	"5f00::/16",      // SRv6 SIDs
	"fc00::/7",       // unique local (private)
	"fe80::/10",      // link-local
	"fec0::/10",      // site-local (deprecated)
	"ff00::/8",       // multicast
)

func mustPrefixes(list ...string) []netip.Prefix {
	out, err := ParseCIDRs(list)
	if err != nil {
		panic(err)
	}
	return out
}

// Guard decides which addresses and URLs the crawler may fetch. The zero value is not usable;
// build one with New. A Guard is safe for concurrent use.
type Guard struct {
	allow []netip.Prefix
	ports []int
}

// New returns a Guard that refuses non-public addresses except those inside allow, which may
// use any port. Public addresses may only use ports; nil or empty means DefaultPorts.
func New(allow []netip.Prefix, ports []int) *Guard {
	if len(ports) == 0 {
		ports = DefaultPorts
	}
	return &Guard{allow: slices.Clone(allow), ports: slices.Clone(ports)}
}

// ParseCIDRs parses a list of CIDR prefixes or single IPs (a single IP becomes a /32 or /128).
// Blank entries are skipped. It is meant for flags and environment variables.
func ParseCIDRs(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if strings.Contains(s, "/") {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return nil, fmt.Errorf("parse allow-list entry %q: not a CIDR prefix: %w", s, err)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("parse allow-list entry %q: not an IP address or CIDR prefix: %w", s, err)
		}
		if a.Zone() != "" {
			return nil, fmt.Errorf("parse allow-list entry %q: zones are not allowed", s)
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// IsPublic reports whether a is a public unicast address, ignoring any allow-list.
func IsPublic(a netip.Addr) bool {
	if !a.IsValid() {
		return false
	}
	a = a.WithZone("").Unmap()
	for _, p := range blocked {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// allowed reports whether a is inside an allow prefix, in its plain or unmapped form.
func (g *Guard) allowed(a netip.Addr) bool {
	a = a.WithZone("")
	for _, p := range g.allow {
		if p.Contains(a) || p.Contains(a.Unmap()) {
			return true
		}
	}
	return false
}

// CheckAddr returns an errclass.SSRF error unless ip:port may be dialled.
func (g *Guard) CheckAddr(ap netip.AddrPort) error {
	a := ap.Addr()
	if g.allowed(a) {
		return nil
	}
	if !IsPublic(a) {
		return errclass.Errorf(errclass.SSRF, "address %s is not public", a)
	}
	if !slices.Contains(g.ports, int(ap.Port())) {
		return errclass.Errorf(errclass.SSRF, "port %d is not allowed for public address %s", ap.Port(), a)
	}
	return nil
}

// Control is a net.Dialer.Control function. It runs after DNS resolution and before the
// connect, for every IP tried, and refuses any address CheckAddr refuses.
func (g *Guard) Control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return errclass.Errorf(errclass.SSRF, "dial %s %q: not an IP address and port: %v", network, address, err)
	}
	if err := g.CheckAddr(ap); err != nil {
		return fmt.Errorf("dial %s %s: %w", network, address, err)
	}
	return nil
}

// CheckURL refuses, with an errclass.SSRF error, a URL the crawler must not fetch: a scheme
// other than http and https, a missing or invalid host or port, a host written in a numeric
// form other than the canonical dotted quad (octal, hex, a single decimal integer, short forms:
// browsers read them as IP addresses, resolvers may not), a literal IP that is not public, or a
// port that is not allowed. Hostnames are checked again at dial time by Control; their port is
// checked here only when the Guard has no allow-list (an allowed address may use any port).
func (g *Guard) CheckURL(u *url.URL) error {
	if u == nil {
		return errclass.Errorf(errclass.SSRF, "no URL")
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return errclass.Errorf(errclass.SSRF, "scheme %q is not allowed", u.Scheme)
	}
	host := u.Hostname()
	if host == "" {
		return errclass.Errorf(errclass.SSRF, "url %q has no host", u.Redacted())
	}
	port, err := urlPort(u, scheme)
	if err != nil {
		return err
	}
	if ip, ok := literalIP(u.Host, host); ok {
		return g.CheckAddr(netip.AddrPortFrom(ip, port))
	}
	canon, err := canonicalHost(scheme, u.Host)
	if err != nil {
		return err
	}
	if ip, err := netip.ParseAddr(strings.Trim(canon, "[]")); err == nil {
		return errclass.Errorf(errclass.SSRF, "host %q is a non-canonical numeric form of %s", host, ip)
	}
	if len(g.allow) == 0 && !slices.Contains(g.ports, int(port)) {
		return errclass.Errorf(errclass.SSRF, "port %d is not allowed", port)
	}
	return nil
}

// literalIP returns the IP of a host written as a canonical IPv4 dotted quad or a bracketed IPv6.
func literalIP(hostport, host string) (netip.Addr, bool) {
	if strings.HasPrefix(hostport, "[") {
		a, err := netip.ParseAddr(host)
		return a, err == nil
	}
	a, err := netip.ParseAddr(host)
	if err != nil || !a.Is4() {
		return netip.Addr{}, false
	}
	return a, true
}

// canonicalHost returns the host as a browser (the WHATWG URL standard) reads it.
func canonicalHost(scheme, hostport string) (string, error) {
	w, err := whatwg.Parse(scheme + "://" + hostport + "/")
	if err != nil {
		return "", errclass.Errorf(errclass.SSRF, "host %q is not valid: %v", hostport, err)
	}
	return w.Hostname(), nil
}

func urlPort(u *url.URL, scheme string) (uint16, error) {
	p := u.Port()
	if p == "" {
		if scheme == "https" {
			return 443, nil
		}
		return 80, nil
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil || n == 0 {
		return 0, errclass.Errorf(errclass.SSRF, "port %q is not valid", p)
	}
	return uint16(n), nil
}
