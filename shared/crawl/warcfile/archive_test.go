package warcfile

import (
	"bufio"
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/warcfile/warctest"
)

// TestFilesPassAnIndependentReader assembles a file and has warcio.js check every record's digests
// and every index line.
func TestFilesPassAnIndependentReader(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)
	pages := samplePages(at)
	records := encodeAll(t, pages)
	name := "batch.warc.gz"
	f, err := Assemble(name, at, records)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, f.Data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+IndexSuffix, f.Index, 0o644); err != nil {
		t.Fatal(err)
	}
	got := warctest.Check(t, path)
	want := warctest.Summary{Files: 1, Records: 8, Warcinfo: 1, Responses: 4, Requests: 3, IndexLines: 4, Resolved: 4}
	if got != want {
		t.Errorf("warcio.js saw %+v, want %+v", got, want)
	}
	// Each page's span reads back its page (what parse does), past the warcinfo and request records.
	for i, s := range f.Spans {
		p, err := Decode(f.Data[s.Offset : s.Offset+s.Length])
		if err != nil {
			t.Fatalf("page %d: %v", i, err)
		}
		if p.URL != pages[i].URL || !bytes.Equal(p.Body, pages[i].Body) {
			t.Errorf("page %d reads back %s (%d bytes), want %s (%d bytes)", i, p.URL, len(p.Body), pages[i].URL, len(pages[i].Body))
		}
	}
	// The index's key and time, checked by hand for the first page.
	sc := bufio.NewScanner(bytes.NewReader(f.Index))
	var keys []string
	for sc.Scan() {
		key, rest, _ := strings.Cut(sc.Text(), " ")
		ts, _, _ := strings.Cut(rest, " ")
		keys = append(keys, key+" "+ts)
	}
	if len(keys) != 4 || keys[3] != "test,a:8080)/b?a=2&z=1 20261201093000" {
		t.Errorf("index keys = %q, want the last to be test,a:8080)/b?a=2&z=1 20261201093000", keys)
	}
}

func TestSURT(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"http://www.Example.com/A/b?y=2&x=1", "com,example)/a/b?x=1&y=2"},
		{"https://example.com", "com,example)/"},
		{"http://www2.a.b.example.org:81/", "org,example,b,a:81)/"},
		{"https://a.test:443/x", "test,a)/x"},
		{"http://127.0.0.1:8080/p", "1,0,0,127:8080)/p"},
		{"dns:example.com", "dns:example.com"},
	} {
		if got := SURT(tt.in); got != tt.want {
			t.Errorf("SURT(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// samplePages are pages of every kind a file holds: with and without a request record, a body
// that compresses, an empty one, an error status.
func samplePages(at time.Time) []Page {
	req := http.Header{"User-Agent": {"crawlstack-test/1"}, "Accept-Encoding": {"gzip, deflate, br"}}
	return []Page{
		{URL: "http://www.a.test:8080/b?z=1&a=2", Status: 200, Header: http.Header{"Content-Type": {"text/html; charset=utf-8"},
			"Content-Encoding": {"gzip"}}, Body: []byte("<title>B</title>"), FetchedAt: at, Request: req},
		{URL: "http://a.test/", Status: 200, Header: http.Header{"Content-Type": {"text/html"}},
			Body: bytes.Repeat([]byte("<p>x</p>\r\n\r\n"), 20_000), FetchedAt: at.Add(time.Second), Request: req},
		{URL: "http://a.test/empty", Status: 204, Header: http.Header{}, FetchedAt: at, Request: req},
		{URL: "http://a.test/no-request", Status: 404, Header: http.Header{"Content-Type": {"text/plain"}},
			Body: []byte("gone"), FetchedAt: at},
	}
}

// TestIndexFileAgreesWithAnIndependentReader indexes stored files (as crawl index does, for files
// stored without their index): warcio.js checks each line against its own indexer and reads back
// its record, and the lines are those the file's writer indexed.
func TestIndexFileAgreesWithAnIndependentReader(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)
	dir := t.TempDir()
	var paths []string
	var indexes [][]byte
	for _, name := range []string{"one.warc.gz", "two.warc.gz"} {
		f, err := Assemble(name, at, encodeAll(t, samplePages(at)))
		if err != nil {
			t.Fatal(err)
		}
		ix, err := IndexFile(name, f.Data)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(ix, f.Index) {
			t.Errorf("IndexFile(%s) =\n%s\nthe writer's index:\n%s", name, ix, f.Index)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path+IndexSuffix, ix, 0o644); err != nil {
			t.Fatal(err)
		}
		paths, indexes = append(paths, path), append(indexes, ix)
	}
	got := warctest.Check(t, paths...)
	want := warctest.Summary{Files: 2, Records: 16, Warcinfo: 2, Responses: 8, Requests: 6, IndexLines: 8, Resolved: 8}
	if got != want {
		t.Errorf("warcio.js saw %+v, want %+v", got, want)
	}
	merged := MergeIndexes(indexes...)
	lines := strings.SplitAfter(string(merged), "\n")
	lines = lines[:len(lines)-1]
	if len(lines) != 8 || !slices.IsSorted(lines) || !strings.Contains(string(merged), `"filename":"two.warc.gz"`) {
		t.Errorf("the merged index has %d lines (sorted: %v), want both files' 8, sorted:\n%s", len(lines), slices.IsSorted(lines), merged)
	}
	if _, err := IndexFile("bad.warc.gz", []byte("not a warc file")); err == nil {
		t.Error("IndexFile of garbage: no error")
	}
}

// encodeAll encodes each page's records.
func encodeAll(t *testing.T, pages []Page) []Record {
	t.Helper()
	records := make([]Record, len(pages))
	for i, p := range pages {
		var err error
		if records[i], err = EncodeRecord(p); err != nil {
			t.Fatal(err)
		}
	}
	return records
}
