package netguard

import (
	"errors"
	"net"
	"net/netip"
	"net/url"
	"syscall"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
)

func TestIsPublic(t *testing.T) {
	tests := []struct {
		ip   string
		want bool
	}{
		{"8.8.8.8", true},
		{"1.1.1.1", true},
		{"2606:4700:4700::1111", true},
		{"0.0.0.0", false},
		{"0.1.2.3", false},
		{"10.0.0.1", false},
		{"100.64.0.1", false},
		{"100.127.255.254", false},
		{"127.0.0.1", false},
		{"127.255.255.255", false},
		{"169.254.169.254", false},
		{"172.16.0.1", false},
		{"172.31.255.255", false},
		{"172.32.0.1", true},
		{"192.0.0.8", false},
		{"192.0.2.1", false},
		{"192.168.1.1", false},
		{"198.18.0.1", false},
		{"198.51.100.1", false},
		{"203.0.113.9", false},
		{"224.0.0.1", false},
		{"239.255.255.250", false},
		{"240.0.0.1", false},
		{"255.255.255.255", false},
		{"::", false},
		{"::1", false},
		{"::ffff:127.0.0.1", false},
		{"::ffff:169.254.169.254", false},
		{"::ffff:10.1.2.3", false},
		{"::ffff:8.8.8.8", true},
		{"::ffff:0:7f00:1", false},    // IPv4-translated 127.0.0.1
		{"::ffff:0:a9fe:a9fe", false}, // IPv4-translated 169.254.169.254
		{"::ffff:0:808:808", false},   // IPv4-translated, even of a public address: a translator decides where it goes
		{"100:0:0:1::1", false},       // dummy prefix
		{"100:0:0:2::1", true},        // past it
		{"::127.0.0.1", false},
		{"64:ff9b::a9fe:a9fe", false},
		{"2001:db8::1", false},
		{"2002:7f00:1::", false},
		{"fc00::1", false},
		{"fd12:3456::1", false},
		{"fe80::1", false},
		{"fe80::1%eth0", false},
		{"ff02::1", false},
	}
	for _, tt := range tests {
		t.Run(tt.ip, func(t *testing.T) {
			if got := IsPublic(netip.MustParseAddr(tt.ip)); got != tt.want {
				t.Errorf("IsPublic(%s) = %v, want %v", tt.ip, got, tt.want)
			}
		})
	}
}

func TestParseCIDRs(t *testing.T) {
	tests := []struct {
		name    string
		in      []string
		want    []string
		wantErr bool
	}{
		{"cidr and single ips", []string{"127.0.0.0/8", " ::1 ", "10.1.2.3", ""}, []string{"127.0.0.0/8", "::1/128", "10.1.2.3/32"}, false},
		{"masks host bits", []string{"10.1.2.3/8"}, []string{"10.0.0.0/8"}, false},
		{"garbage", []string{"localhost"}, nil, true},
		{"bad prefix", []string{"10.0.0.0/33"}, nil, true},
		{"zone", []string{"fe80::1%eth0"}, nil, true},
		{"nil", nil, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseCIDRs(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseCIDRs(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("ParseCIDRs(%q) = %v, want %v", tt.in, got, tt.want)
			}
			for i := range got {
				if got[i].String() != tt.want[i] {
					t.Errorf("ParseCIDRs(%q)[%d] = %v, want %v", tt.in, i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestControl(t *testing.T) {
	allow, err := ParseCIDRs([]string{"127.0.0.1", "10.9.0.0/16"})
	if err != nil {
		t.Fatal(err)
	}
	g := New(allow, nil)
	tests := []struct {
		addr string
		ok   bool
	}{
		{"8.8.8.8:443", true},
		{"8.8.8.8:80", true},
		{"8.8.8.8:8080", false},
		{"[2606:4700::1]:443", true},
		{"127.0.0.1:54321", true},
		{"[::ffff:127.0.0.1]:54321", true},
		{"127.0.0.2:80", false},
		{"[::1]:80", false},
		{"10.9.1.1:22", true},
		{"10.8.1.1:80", false},
		{"169.254.169.254:80", false},
		{"[::ffff:169.254.169.254]:80", false},
		{"[fe80::1%eth0]:80", false},
		{"0.0.0.0:80", false},
		{"example.com:80", false},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			err := g.Control("tcp", tt.addr, nil)
			if (err == nil) != tt.ok {
				t.Fatalf("Control(%s) = %v, want ok=%v", tt.addr, err, tt.ok)
			}
			if err != nil && errclass.Of(err) != errclass.SSRF {
				t.Errorf("Control(%s) class = %q, want %q", tt.addr, errclass.Of(err), errclass.SSRF)
			}
		})
	}
}

func TestCheckURL(t *testing.T) {
	tests := []struct {
		name  string
		allow []string
		url   string
		ok    bool
	}{
		{"public host", nil, "https://example.com/a", true},
		{"public host port 80", nil, "http://example.com:80/", true},
		{"public host empty port", nil, "http://example.com:/", true},
		{"public host odd port", nil, "http://example.com:8080/", false},
		{"odd port left to dial time with allow-list", []string{"127.0.0.1"}, "http://localhost:8080/", true},
		{"public ip", nil, "http://93.184.216.34/", true},
		{"ftp", nil, "ftp://example.com/", false},
		{"file", nil, "file:///etc/passwd", false},
		{"gopher", nil, "gopher://example.com/", false},
		{"no host", nil, "http:///path", false},
		{"bad port", nil, "http://example.com:99999/", false},
		{"zero port", nil, "http://example.com:0/", false},
		{"loopback", nil, "http://127.0.0.1/", false},
		{"metadata", nil, "http://169.254.169.254/latest/meta-data/", false},
		{"private", nil, "http://192.168.0.1/", false},
		{"ipv6 loopback", nil, "http://[::1]/", false},
		{"ipv4-mapped loopback", nil, "http://[::ffff:127.0.0.1]/", false},
		{"ipv4-mapped hex", nil, "http://[::ffff:7f00:1]/", false},
		{"octal", nil, "http://0177.0.0.1/", false},
		{"decimal integer", nil, "http://2130706433/", false},
		{"hex short", nil, "http://0x7f.1/", false},
		{"hex full", nil, "http://0x7f000001/", false},
		{"short form", nil, "http://127.1/", false},
		{"trailing dot", nil, "http://127.0.0.1./", false},
		{"octal metadata", nil, "http://0251.0376.0251.0376/", false},
		{"decimal of a public ip is still refused", nil, "http://134744072/", false},
		{"allowed loopback any port", []string{"127.0.0.0/8"}, "http://127.0.0.1:8080/", true},
		{"allowed mapped", []string{"127.0.0.1"}, "http://[::ffff:127.0.0.1]:8080/", true},
		{"allow-list does not cover other loopback", []string{"127.0.0.1"}, "http://127.0.0.2:8080/", false},
		{"public ip odd port", nil, "http://93.184.216.34:22/", false},
		{"ipv6 link-local with zone", nil, "http://[fe80::1%25eth0]/", false},
		{"userinfo does not hide the host", nil, "http://example.com@127.0.0.1/", false},
		{"upper-case scheme", nil, "HTTPS://example.com/", true},
		{"hostname that ends in a number label is numeric", nil, "http://foo.0x10/", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			allow, err := ParseCIDRs(tt.allow)
			if err != nil {
				t.Fatal(err)
			}
			u, err := url.Parse(tt.url)
			if err != nil {
				t.Fatalf("url.Parse(%q): %v", tt.url, err)
			}
			err = New(allow, nil).CheckURL(u)
			if (err == nil) != tt.ok {
				t.Fatalf("CheckURL(%s) = %v, want ok=%v", tt.url, err, tt.ok)
			}
			if err != nil && errclass.Of(err) != errclass.SSRF {
				t.Errorf("CheckURL(%s) class = %q, want %q", tt.url, errclass.Of(err), errclass.SSRF)
			}
		})
	}
}

// TestDialerRefusesBeforeConnect proves the guard refuses inside net.Dialer.Control, which runs
// before connect(2): a Control that falls through past the guard fails the test and stops the dial.
func TestDialerRefusesBeforeConnect(t *testing.T) {
	g := New(nil, nil)
	for _, addr := range []string{"169.254.169.254:80", "10.0.0.1:80", "127.0.0.1:80", "[::1]:80"} {
		t.Run(addr, func(t *testing.T) {
			d := net.Dialer{Control: func(network, address string, c syscall.RawConn) error {
				if err := g.Control(network, address, c); err != nil {
					return err
				}
				t.Errorf("guard let %s through to connect", address)
				return errors.New("test stopped the connect")
			}}
			_, err := d.Dial("tcp", addr)
			if errclass.Of(err) != errclass.SSRF {
				t.Fatalf("Dial(%s) error = %v, want class %q", addr, err, errclass.SSRF)
			}
		})
	}
}

// IsPublic refuses every address that net/netip itself calls loopback, private, link-local,
// multicast or unspecified, in both families and IPv4-mapped: an oracle independent of the
// blocked list, over a sweep of addresses.
func TestIsPublicAgreesWithNetip(t *testing.T) {
	special := func(a netip.Addr) bool {
		return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
			a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified()
	}
	n := 0
	check := func(a netip.Addr) {
		for _, x := range []netip.Addr{a, netip.AddrFrom16(a.As16())} {
			if special(x.Unmap()) && IsPublic(x) {
				t.Errorf("IsPublic(%s) = true; net/netip calls it special", x)
			}
		}
		n++
	}
	for i := range 1 << 16 {
		check(netip.AddrFrom4([4]byte{byte(i >> 8), byte(i), byte(i * 7), 1}))
		var b [16]byte
		b[0], b[1], b[15] = byte(i>>8), byte(i), 1
		check(netip.AddrFrom16(b))
	}
	if n != 1<<17 {
		t.Fatalf("checked %d addresses", n)
	}
}
