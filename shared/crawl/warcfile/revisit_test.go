package warcfile

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/warcfile/warctest"
)

// TestRevisitRecordsPassAnIndependentReader writes a first crawl's file and a recrawl's file of
// revisit records referring to it (one of each profile), and has warcio.js check both: the
// revisits' profiles, headers and digests, their index lines, and that each one's payload digest
// is that of the record it refers to.
func TestRevisitRecordsPassAnIndependentReader(t *testing.T) {
	first := time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)
	again := first.Add(24 * time.Hour)
	pages := samplePages(first)[:2]
	dir := t.TempDir()
	earlier, err := Assemble("first.warc.gz", first, encodeAll(t, pages))
	if err != nil {
		t.Fatal(err)
	}
	// The first page comes again with the same body; the second answers 304 to a conditional GET.
	same := pages[0]
	same.FetchedAt = again
	notModified := Page{URL: pages[1].URL, Status: http.StatusNotModified, Header: http.Header{"Etag": {`"v1"`}},
		FetchedAt: again, Request: http.Header{"If-None-Match": {`"v1"`}}}
	digests := []string{PayloadDigest(pages[0].Body), PayloadDigest(pages[1].Body)}
	revisits := []Revisit{
		{Profile: ProfileIdenticalPayload, RefersToURI: pages[0].URL, RefersToDate: first, Digest: digests[0]},
		{Profile: ProfileNotModified, RefersToURI: pages[1].URL, RefersToDate: pages[1].FetchedAt, Digest: digests[1]},
	}
	var recs []Record
	for i, p := range []Page{same, notModified} {
		r, err := EncodeRevisit(p, revisits[i])
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	later, err := Assemble("again.warc.gz", again, recs)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for name, f := range map[string]File{"first.warc.gz": earlier, "again.warc.gz": later} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path+IndexSuffix, f.Index, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	got := warctest.Check(t, paths...)
	want := warctest.Summary{Files: 2, Records: 10, Warcinfo: 2, Responses: 2, Requests: 4, Revisits: 2, IndexLines: 4,
		Resolved: 4, RevisitsResolved: 2}
	if got != want {
		t.Errorf("warcio.js saw %+v, want %+v", got, want)
	}
	for i, s := range later.Spans {
		p, err := Decode(later.Data[s.Offset : s.Offset+s.Length])
		if err != nil {
			t.Fatalf("revisit %d: %v", i, err)
		}
		if p.Revisit == nil || *p.Revisit != revisits[i] || len(p.Body) != 0 {
			t.Errorf("revisit %d decodes as %+v with %d body bytes, want %+v and none", i, p.Revisit, len(p.Body), revisits[i])
		}
	}
	if !strings.Contains(string(later.Index), `"mime":"warc/revisit","status":"304"`) {
		t.Errorf("the index has no revisit line of status 304:\n%s", later.Index)
	}
	ix, err := IndexFile("again.warc.gz", later.Data)
	if err != nil || !bytes.Equal(ix, later.Index) {
		t.Errorf("IndexFile = %s, %v; the writer's index:\n%s", ix, err, later.Index)
	}
}

func TestEncodeRevisitRefusesWhatItCannotClaim(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)
	p := samplePages(at)[0]
	ok := Revisit{Profile: ProfileIdenticalPayload, RefersToURI: p.URL, RefersToDate: at, Digest: PayloadDigest(p.Body)}
	for name, r := range map[string]Revisit{
		"another payload": {Profile: ok.Profile, RefersToURI: p.URL, RefersToDate: at, Digest: PayloadDigest([]byte("other"))},
		"unknown profile": {Profile: "http://netpreserve.org/warc/1.0/revisit/uri-agnostic", RefersToURI: p.URL, RefersToDate: at, Digest: ok.Digest},
		"no date":         {Profile: ok.Profile, RefersToURI: p.URL, Digest: ok.Digest},
	} {
		if _, err := EncodeRevisit(p, r); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := EncodeRevisit(p, ok); err != nil {
		t.Errorf("a good revisit: %v", err)
	}
}
