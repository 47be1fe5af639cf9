package message

import (
	"strings"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
)

// v1 bodies as version 1 of the crawler wrote them (its Encode), one of each kind.
const (
	v1Fetch     = `{"v":1,"kind":"fetch","crawl":"c","url":"http://a.test/x","root":"http://a.test/","depth":1,"g":"grp","retries":2}`
	v1FetchList = `{"v":1,"kind":"fetch","crawl":"c","urls":[{"url":"http://a.test/1","root":"http://a.test/","g":"g1"},{"url":"http://b.test/2","root":"http://b.test/"}]}`
	v1Links     = `{"v":1,"kind":"links","crawl":"c","root":"http://a.test/","parent":"http://a.test/","depth":1,"urls":["http://a.test/y"]}`
	v1Parse     = `{"v":1,"kind":"parse","crawl":"c","file":"pages/c/f.warc.gz","pages":[{"url":"u","finalUrl":"u","root":"r","depth":0,"status":200,"fetchedAt":"2026-01-01T00:00:00Z","offset":0,"length":10}]}`
	v1Check     = `{"v":1,"kind":"check","crawl":"c","seq":3}`
)

// TestTheVersionBeforeIsUpgraded: a message of version 1 decodes as version 2, its group under
// its new name, and is written again as version 2.
func TestTheVersionBeforeIsUpgraded(t *testing.T) {
	f, err := DecodeFetch(v1Fetch)
	if err != nil {
		t.Fatal(err)
	}
	if f.V != Version || f.Group != "grp" || f.URL != "http://a.test/x" || f.Depth != 1 || f.Retries != 2 {
		t.Errorf("v1 fetch decoded as %+v, want version %d with group grp", f, Version)
	}
	out, err := Encode(f)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"v":2,`) || !strings.Contains(out, `"group":"grp"`) || strings.Contains(out, `"g":`) {
		t.Errorf("re-encoded as %s, want version 2 with \"group\"", out)
	}
	list, err := DecodeFetch(v1FetchList)
	if err != nil {
		t.Fatal(err)
	}
	if parts := list.Split(); len(parts) != 2 || parts[0].Group != "g1" || parts[1].Group != "" {
		t.Errorf("v1 fetch of two urls: %+v, want the first in group g1 and the second in its own", list.URLs)
	}
	for kind, body := range map[Kind]string{KindLinks: v1Links, KindParse: v1Parse, KindCheck: v1Check} {
		m, err := Decode(body, kind)
		if err != nil {
			t.Errorf("v1 %s: %v", kind, err)
			continue
		}
		if v := m.(decoded).header().V; v != Version {
			t.Errorf("v1 %s decoded as version %d, want %d", kind, v, Version)
		}
	}
}

// TestOtherVersionsArePoisonThatSaysWhy: a newer version than this code writes, an older one
// than the one before, and a version 1 key in a version 2 message are each quarantined (class
// poison) with a reason that says what to do.
func TestOtherVersionsArePoisonThatSaysWhy(t *testing.T) {
	for name, tc := range map[string]struct{ body, want string }{
		"newer":                   {strings.Replace(v1Links, `"v":1`, `"v":3`, 1), "schema version 3, written by a newer version of the crawler (this one reads 1 and 2): deploy the new version everywhere"},
		"too old":                 {strings.Replace(v1Links, `"v":1`, `"v":0`, 1), "schema version 0, written by a version of the crawler two or more schema versions old"},
		"a v1 key in a v2":        {strings.Replace(v1Fetch, `"v":1`, `"v":2`, 1), `unknown field "g"`},
		"both names of the group": {strings.Replace(v1Fetch, `"g":"grp"`, `"g":"grp","group":"x"`, 1), `unknown field "g"`},
		"bad urls in a v1 fetch":  {`{"v":1,"kind":"fetch","crawl":"c","urls":{"url":"x"}}`, "upgrade fetch message of schema version 1: urls"},
	} {
		_, err := Decode(tc.body, KindFetch)
		if name == "newer" || name == "too old" {
			_, err = Decode(tc.body, KindLinks)
		}
		if errclass.Of(err) != errclass.Poison || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want poison saying %q", name, err, tc.want)
		}
	}
}
