package session_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/session"
)

var now = time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)

// setCookies parses Set-Cookie lines as net/http does for an answer.
func setCookies(lines ...string) []*http.Cookie {
	h := http.Header{}
	for _, l := range lines {
		h.Add("Set-Cookie", l)
	}
	return (&http.Response{Header: h}).Cookies()
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// A jar sends back what the host set, as net/http/cookiejar matches it (path, secure, domain),
// replaces a cookie set again, and forgets one removed or expired.
func TestAJarSendsWhatItsHostSetAsCookiejarMatchesIt(t *testing.T) {
	clock := now
	j, err := session.NewJar("shop.example", nil, func() time.Time { return clock })
	if err != nil {
		t.Fatal(err)
	}
	j.SetCookies(mustURL(t, "https://shop.example/account/login"), setCookies(
		"sid=one; Path=/; HttpOnly", "cart=x", "sec=s; Secure; Path=/", "short=1; Max-Age=60; Path=/",
		"other=o; Domain=elsewhere.example; Path=/"))
	names := func(raw string) string {
		var out []string
		for _, c := range j.Cookies(mustURL(t, raw)) {
			out = append(out, c.Name+"="+c.Value)
		}
		return strings.Join(out, " ")
	}
	cases := []struct{ url, want string }{
		{"https://shop.example/", "sid=one sec=s short=1"},
		{"http://shop.example/", "sid=one short=1"},                        // Secure goes over https only
		{"https://shop.example/account/x", "cart=x sid=one sec=s short=1"}, // cart's default path is /account
		{"https://other.example/", ""},                                     // another host's requests get nothing
	}
	for _, c := range cases {
		if got := names(c.url); !sameSet(got, c.want) {
			t.Errorf("cookies for %s = %q, want %q", c.url, got, c.want)
		}
	}
	j.SetCookies(mustURL(t, "https://shop.example/"), setCookies("sid=two; Path=/", "cart=; Path=/account; Max-Age=-1"))
	stored, dropped := session.Apply(nil, j.Changes(), clock)
	if dropped != 0 {
		t.Errorf("dropped = %d, want 0", dropped)
	}
	// Stored and read back as a fresh invocation would, 2 minutes on: short expired.
	clock = now.Add(2 * time.Minute)
	enc, err := session.Encode(stored)
	if err != nil {
		t.Fatal(err)
	}
	back, err := session.Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	j2, err := session.NewJar("shop.example", back, func() time.Time { return clock })
	if err != nil {
		t.Fatal(err)
	}
	j = j2
	if got, want := names("https://shop.example/account/x"), "sid=two sec=s"; !sameSet(got, want) {
		t.Errorf("after a replace, a removal and an expiry, read back: %q, want %q", got, want)
	}
	if len(j.Changes()) != 0 {
		t.Errorf("a jar read back has %d changes, want none", len(j.Changes()))
	}
}

func sameSet(a, b string) bool {
	fa, fb := strings.Fields(a), strings.Fields(b)
	if len(fa) != len(fb) {
		return false
	}
	for _, x := range fa {
		if !strings.Contains(" "+b+" ", " "+x+" ") {
			return false
		}
	}
	return true
}

// Changes applied onto a jar another invocation saved keep both's cookies; the bounds hold.
func TestApplyMergesAndBounds(t *testing.T) {
	u := mustURL(t, "https://h.example/")
	mine := session.Learn(u, setCookies("a=1; Path=/", "gone=; Path=/; Max-Age=-1"), now)
	theirs, _ := session.Apply(nil, session.Learn(u, setCookies("b=2; Path=/", "gone=x; Path=/"), now), now)
	got, dropped := session.Apply(theirs, mine, now)
	if dropped != 0 || len(got) != 2 || got[0].Name != "b" || got[1].Name != "a" {
		t.Errorf("merged = %v (dropped %d), want b and a, gone removed", got, dropped)
	}
	var many []string
	for i := range session.MaxCookies + 3 {
		many = append(many, "c"+strings.Repeat("x", i%5)+string(rune('a'+i%26))+string(rune('a'+i/26))+"=v; Path=/")
	}
	many = append(many, "big="+strings.Repeat("v", session.MaxCookieBytes)+"; Path=/")
	full, dropped := session.Apply(nil, session.Learn(u, setCookies(many...), now), now)
	if len(full) != session.MaxCookies || dropped != 4 {
		t.Errorf("a jar given %d cookies keeps %d and drops %d, want %d and 4", len(many), len(full), dropped, session.MaxCookies)
	}
	enc, err := session.Encode(full)
	if err != nil {
		t.Fatal(err)
	}
	if len(enc) > 400<<10/2 {
		t.Errorf("a full jar encodes to %d bytes, want well under DynamoDB's 400 KB", len(enc))
	}
}
