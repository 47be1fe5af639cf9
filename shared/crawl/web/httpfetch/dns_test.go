package httpfetch

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// fakeDNS is a loopback DNS server: names in a answer with those IPv4 addresses, names that
// start with "fail." answer SERVFAIL, and every other name is NXDOMAIN. Nothing reaches real DNS.
func fakeDNS(t *testing.T, a map[string]netip.Addr) *net.Resolver {
	t.Helper()
	return dnsServer(t, func(name string, _ bool) (netip.Addr, bool) {
		ip, ok := a[name]
		return ip, ok
	})
}

// rebindingDNS is a loopback DNS server whose A answer for name is first the first time it is
// asked, and then every time after; other names are NXDOMAIN. It plays a rebinding attacker's
// name server (TTL 0 in spirit: nothing caches here).
func rebindingDNS(t *testing.T, name string, first, then netip.Addr) *net.Resolver {
	t.Helper()
	var mu sync.Mutex
	asked := 0
	return dnsServer(t, func(q string, isA bool) (netip.Addr, bool) {
		mu.Lock()
		defer mu.Unlock()
		if q != name {
			return netip.Addr{}, false
		}
		if !isA {
			return netip.Addr{}, true
		}
		asked++
		if asked == 1 {
			return first, true
		}
		return then, true
	})
}

// dnsServer answers each query with what lookup says of the name asked (isA: an A query; its
// address is used for those only): known names get NOERROR, others NXDOMAIN, and names that
// start with "fail." SERVFAIL.
func dnsServer(t *testing.T, lookup func(name string, isA bool) (netip.Addr, bool)) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if out, ok := answer(buf[:n], lookup); ok {
				pc.WriteTo(out, from)
			}
		}
	}()
	addr := pc.LocalAddr().String()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", addr)
	}}
}

func answer(query []byte, lookup func(string, bool) (netip.Addr, bool)) ([]byte, bool) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, false
	}
	q, err := p.Question()
	if err != nil {
		return nil, false
	}
	name := strings.TrimSuffix(strings.ToLower(q.Name.String()), ".")
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionAvailable: true}
	ip, known := lookup(name, q.Type == dnsmessage.TypeA)
	switch {
	case strings.HasPrefix(name, "fail."):
		rh.RCode = dnsmessage.RCodeServerFailure
	case !known:
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, false
	}
	if err := b.Question(q); err != nil {
		return nil, false
	}
	if err := b.StartAnswers(); err != nil {
		return nil, false
	}
	if known && q.Type == dnsmessage.TypeA {
		res := dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 60}
		if err := b.AResource(res, dnsmessage.AResource{A: ip.As4()}); err != nil {
			return nil, false
		}
	}
	out, err := b.Finish()
	return out, err == nil
}
