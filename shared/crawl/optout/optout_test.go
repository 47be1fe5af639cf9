package optout

import (
	"context"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/local/sqlite"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

var now = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func TestNewEntryNormalisesAndRefuses(t *testing.T) {
	for _, tt := range []struct {
		kind      Kind
		in, want  string
		wantError string
	}{
		{Host, "Example.COM", "example.com", ""},
		{Host, "example.com:8080", "", "want a host name"},
		{Host, "example.com/private", "", "want a host name"},
		{Host, " ", "", "empty"},
		{Prefix, "HTTPS://Example.com:443/Private/", "https://example.com/Private/", ""},
		{Prefix, "https://example.com", "https://example.com/", ""},
		{Prefix, "ftp://example.com/", "", "want an http or https URL"},
		{URL, "http://EXAMPLE.com:80/a#frag", "http://example.com/a", ""},
		{Pattern, "/users/[0-9]+/", "/users/[0-9]+/", ""},
		{Pattern, "(", "", "not a Go regexp"},
		{"domain", "example.com", "", "want host, prefix, pattern or url"},
	} {
		e, err := NewEntry(tt.kind, tt.in, "r", now)
		switch {
		case tt.wantError != "" && (err == nil || !strings.Contains(err.Error(), tt.wantError)):
			t.Errorf("NewEntry(%s, %q) = %+v, %v; want an error saying %q", tt.kind, tt.in, e, err, tt.wantError)
		case tt.wantError == "" && (err != nil || e.Value != tt.want || e.Kind != tt.kind || e.Reason != "r" || !e.Added.Equal(now)):
			t.Errorf("NewEntry(%s, %q) = %+v, %v; want value %q", tt.kind, tt.in, e, err, tt.want)
		}
	}
}

func TestMatch(t *testing.T) {
	var list []Entry
	for _, e := range []struct {
		k Kind
		v string
	}{{Host, "example.com"}, {Prefix, "https://shop.test/private/"}, {Pattern, `/users/[0-9]+/`}, {URL, "http://page.test/gone"}} {
		en, err := NewEntry(e.k, e.v, "", now)
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, en)
	}
	for raw, want := range map[string]Kind{
		"http://example.com/":            Host,
		"https://www.example.com/a":      Host,
		"http://notexample.com/":         "",
		"http://example.com.evil.test/":  "",
		"https://shop.test/private/a":    Prefix,
		"https://shop.test/privately":    "",
		"http://shop.test/private/a":     "",
		"http://any.test/users/12/posts": Pattern,
		"http://any.test/users/me/":      "",
		"http://page.test/gone":          URL,
		"http://page.test/gone/more":     "",
	} {
		u, _ := url.Parse(raw)
		e, ok := Match(list, u)
		if got := map[bool]Kind{true: e.Kind}[ok]; got != want {
			t.Errorf("%s matched %q (%+v), want %q", raw, got, e, want)
		}
	}
}

func TestStoreOnSQLite(t *testing.T) {
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	testStore(t, db.Table("t"))
}

// testStore: entries added are listed, once each however often added, in kind order; a removed
// one is gone and a second removal says it was not there; a Matcher sees an entry added after its
// read once RefreshEvery has passed.
func testStore(t *testing.T, tb table.Table) {
	ctx := context.Background()
	s := Store{T: tb}
	if list, err := s.List(ctx); err != nil || len(list) != 0 {
		t.Fatalf("a new list = %v, %v; want it empty", list, err)
	}
	clock := now
	m := &Matcher{Store: s, Now: func() time.Time { return clock }}
	page, _ := url.Parse("http://opted.test/a")
	if _, out, err := m.OptedOut(ctx, page); err != nil || out {
		t.Fatalf("OptedOut on an empty list = %v, %v", out, err)
	}
	host, _ := NewEntry(Host, "opted.test", "owner's request", now)
	pat, _ := NewEntry(Pattern, "/users/[0-9]+/", "", now)
	for _, e := range []Entry{pat, host, host} {
		if err := s.Add(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.List(ctx)
	if err != nil || len(list) != 2 || list[0] != host || list[1] != pat {
		t.Fatalf("List = %+v, %v; want the host then the pattern", list, err)
	}
	if _, out, _ := m.OptedOut(ctx, page); out {
		t.Errorf("the Matcher saw the entry before RefreshEvery passed: it read the list again too soon")
	}
	clock = clock.Add(RefreshEvery)
	if e, out, err := m.OptedOut(ctx, page); err != nil || !out || e.Reason != "owner's request" {
		t.Errorf("OptedOut after RefreshEvery = %+v, %v, %v; want the host entry", e, out, err)
	}
	if was, err := s.Remove(ctx, host); err != nil || !was {
		t.Errorf("Remove = %v, %v; want it removed", was, err)
	}
	if was, err := s.Remove(ctx, host); err != nil || was {
		t.Errorf("a second Remove = %v, %v; want it not there", was, err)
	}
	if list, err := s.List(ctx); err != nil || len(list) != 1 || list[0] != pat {
		t.Errorf("List after the removal = %+v, %v; want the pattern", list, err)
	}
}
