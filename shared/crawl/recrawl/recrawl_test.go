package recrawl

import (
	"net/http"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
)

func TestPriorOfAFetchedPage(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	body := []byte("<title>x</title>")
	page := &crawlstate.Page{WARCKey: "pages/c1/a.warc.gz", Offset: 10, Length: 90, FinalURL: "http://a.test/", Status: 200,
		FetchedAt: at, Msg: "m1", ETag: `"v1"`, LastModified: "Tue, 01 Dec 2026 09:00:00 GMT", Digest: warcfile.PayloadDigest(body)}
	u := crawlstate.URL{State: crawlstate.Fetched, Page: page}
	p, ok := PriorOf("c1", u)
	want := message.Unchanged{Payload: message.Ref{Key: "pages/c1/a.warc.gz", Offset: 10, Length: 90}, URI: "http://a.test/",
		Date: at, Digest: page.Digest, Crawl: "c1", Msg: "m1"}
	if !ok || p.ETag != `"v1"` || p.Unchanged != want {
		t.Fatalf("PriorOf = %+v, %v; want %+v", p, ok, want)
	}
	for _, tt := range []struct {
		name    string
		status  int
		body    []byte
		profile string
	}{
		{"304", http.StatusNotModified, nil, warcfile.ProfileNotModified},
		{"the same payload", 200, body, warcfile.ProfileIdenticalPayload},
		{"another payload", 200, []byte("<title>y</title>"), ""},
		{"a 404", 404, body, ""},
	} {
		rev, un, same := p.Verdict(tt.status, tt.body)
		if same != (tt.profile != "") || same && (rev.Profile != tt.profile || un.Profile != tt.profile || rev.Digest != page.Digest ||
			rev.RefersToURI != "http://a.test/" || !rev.RefersToDate.Equal(at)) {
			t.Errorf("%s: Verdict = %+v, %+v, %v; want profile %q", tt.name, rev, un, same, tt.profile)
		}
	}
	// A page found unchanged refers on to where its payload is, and its record is this crawl's.
	again := *page
	again.WARCKey, again.Msg, again.FetchedAt = "pages/c2/b.warc.gz", "m2", at.Add(24*time.Hour)
	again.Unchanged = &message.Unchanged{Profile: warcfile.ProfileNotModified, Payload: want.Payload, URI: want.URI, Date: at,
		Digest: page.Digest, Crawl: "c1", Msg: "m1"}
	p2, ok := PriorOf("c2", crawlstate.URL{State: crawlstate.Fetched, Page: &again})
	want2 := want
	want2.Crawl, want2.Msg = "c2", "m2"
	if !ok || p2.Unchanged != want2 {
		t.Errorf("PriorOf an unchanged page = %+v, %v; want %+v", p2.Unchanged, ok, want2)
	}
	for name, u := range map[string]crawlstate.URL{
		"skipped":        {State: crawlstate.Skipped},
		"a 404":          {State: crawlstate.Fetched, Page: &crawlstate.Page{Status: 404, Digest: page.Digest}},
		"with no digest": {State: crawlstate.Fetched, Page: &crawlstate.Page{Status: 200}},
	} {
		if _, ok := PriorOf("c1", u); ok {
			t.Errorf("%s: a prior", name)
		}
	}
}

func TestNotModifiedSinceTakesTheLastmodsWholeSpan(t *testing.T) {
	fetched := time.Date(2026, 12, 1, 10, 0, 0, 500_000_000, time.UTC)
	p := Prior{FetchedAt: fetched}
	for _, tt := range []struct {
		lastmod time.Time
		want    bool
	}{
		{time.Time{}, false},
		{time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), true},  // the day before
		{time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), false},  // that day: maybe after the fetch
		{time.Date(2026, 12, 1, 9, 59, 59, 0, time.UTC), true}, // the second before
		{time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), false}, // the same second
		{time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC), false},
	} {
		if got := p.NotModifiedSince(tt.lastmod); got != tt.want {
			t.Errorf("NotModifiedSince(%v) = %v, want %v", tt.lastmod, got, tt.want)
		}
	}
}
