package crawlstate

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// codecOutcomes are outcomes of every shape a group's item holds: pages in the usual file and
// another, redirected, with odd statuses, types, validators and digests, a revisit, part names,
// and failures whose detail holds the form's own separator and escape.
func codecOutcomes() []Outcome {
	at := time.Date(2026, 12, 5, 23, 59, 59, 123456789, time.UTC)
	usual := "pages/c1/2026/12/05/fnsc7v77zbnmkd4vzhsu4igcfs.warc.gz"
	page := func(p Page) *Page {
		if p.WARCKey == "" {
			p.WARCKey = usual
		}
		if p.Status == 0 {
			p.Status = 200
		}
		if p.FetchedAt.IsZero() {
			p.FetchedAt = at
		}
		return &p
	}
	u := "https://www.example.org/articles/2026/12/a-fairly-long-article-slug-about-the-news-of-the-day?ref=home&x=1"
	part3, gone := message.PartName(usual, 3), "pages/other/x.warc.gz#2"
	un := &message.Unchanged{Profile: "http://netpreserve.org/warc/1.1/revisit/server-not-modified",
		Payload: message.Ref{Key: "pages/c0/2026/11/01/abc.warc.gz", Offset: 77, Length: 900}, URI: u,
		Date: at.Add(-time.Hour), Digest: "sha256:" + strings.Repeat("ab", 32), Crawl: "c0", Msg: "pages/c0/2026/11/01/abc.warc.gz#0"}
	return []Outcome{
		{Key: "k1", URL: u, State: Fetched, Page: page(Page{Offset: 12345, Length: 20480, FinalURL: u,
			ContentType: "text/html; charset=utf-8", Msg: message.PartName(usual, 0), ETag: `"5f3a2b1c-4e21a"`,
			LastModified: "Wed, 02 Dec 2026 10:15:00 GMT", Digest: "sha256:" + strings.Repeat("0f", 32)})},
		{Key: "k2", URL: u, State: Fetched, Page: page(Page{Offset: 0, Length: 1, FinalURL: u + "/moved|~%7C", Status: 404,
			ContentType: "application/x-odd|type", Msg: part3, ETag: `W/"a|b~c"`, LastModified: "Wed, 2 Dec 2026 10:15:00 GMT",
			Digest: "sha256:ABCDEF"})},
		{Key: "k3", URL: u, State: Fetched, Page: page(Page{WARCKey: "pages/elsewhere/x.warc.gz", Offset: 5, Length: 6, FinalURL: u,
			Status: 301, Msg: gone, FetchedAt: time.Unix(0, 1796513097140410178).UTC()})},
		{Key: "k4", URL: u, State: Fetched, Page: page(Page{Offset: 9, Length: 10, FinalURL: u, Msg: "",
			FetchedAt: time.Date(2026, 12, 6, 0, 0, 0, 1, time.UTC), Digest: "sha256:" + strings.Repeat("00", 32)})},
		{Key: "k5", URL: u, State: Fetched, Page: page(Page{Offset: 1, Length: 2, FinalURL: u, Msg: message.PartName(usual, 0),
			Digest: un.Digest, Unchanged: un, FetchedAt: time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)})},
		{Key: "k6", URL: u, State: Failed, Cause: errclass.Errorf(errclass.Timeout, "GET: \"slow\" | ~0 ~1\n\tafter 30s\u2028"), Redrivable: true},
		{Key: "k7", URL: u, State: Skipped, Cause: errclass.Errorf(errclass.Robots, "disallowed by robots.txt: /private/")},
		{Key: "k8", URL: u, State: Stopped, Cause: errors.New("no class")},
		{Key: "k9", URL: u, State: Fetched, Page: page(Page{Offset: 3, Length: 4, FinalURL: u, Msg: message.PageName(usual, 3)})},
	}
}

// Every outcome reads back as it was written, in the compact form and in the JSON form of before,
// with its file named by its id in the item or in full: the page, its class and its detail.
func TestOutcomesReadBackAsWritten(t *testing.T) {
	const crawl = "c1"
	for _, o := range codecOutcomes() {
		want := URL{Key: o.Key, URL: o.URL, State: o.State, Page: o.Page}
		if o.Cause != nil {
			want.Class, want.Detail = errclass.Of(o.Cause), o.Cause.Error()
		}
		st, err := storedOf(crawl, o, writerTag("owner"))
		if err != nil {
			t.Fatal(err)
		}
		byID := st
		if byID.B != "" {
			byID.Ref = fileID(byID.B)
		}
		old, err := jsonOutcome(crawl, o, writerTag("owner"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []struct {
			name, raw string
			item      table.Item
		}{
			{"inline", st.text(), table.Item{}},
			{"by id", byID.text(), table.Item{fileAttr(byID.Ref): byID.B}},
			{"json", old, table.Item{}},
		} {
			got := URL{Key: o.Key, URL: o.URL, State: Queued}
			if err := got.apply(crawl, f.raw, fileOf(f.item, f.raw)); err != nil {
				t.Errorf("%s %s: apply(%q): %v", o.Key, f.name, f.raw, err)
				continue
			}
			got.outcome = ""
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s %s: %q reads back as\n%+v %+v\nwant\n%+v %+v", o.Key, f.name, f.raw, got, got.Page, want, want.Page)
			}
		}
	}
}

// The compact form is much smaller than the JSON form it replaced: a fetched page's outcome with
// its validators and digest is under half.
func TestTheCompactFormIsSmall(t *testing.T) {
	o := codecOutcomes()[0]
	st, err := storedOf("c1", o, "")
	if err != nil {
		t.Fatal(err)
	}
	st.Ref = fileID(st.B)
	old, _ := jsonOutcome("c1", o, "")
	if got := st.text(); len(got) > 110 || 2*len(got) > len(old) {
		t.Errorf("outcome of %d bytes %q; JSON took %d: want at most 110 and under half", len(got), got, len(old))
	}
}

// A damaged outcome is an error that names what is wrong, never a page read wrong.
func TestADamagedOutcomeIsAnError(t *testing.T) {
	for _, raw := range []string{"", "ff|o1", "f||o1", "f|o1|o2", "f|oZZ$", "f|q1", "f|fAB", "f|y99", "f|gabc",
		"f|b2026/12/05/x|a!", "f|bnot-a-day|a5", "f|i?", "f|n{"} {
		var u URL
		if err := u.apply("c1", raw, ""); err == nil {
			t.Errorf("apply(%q) = nil, want an error; read %+v %+v", raw, u, u.Page)
		}
	}
}
