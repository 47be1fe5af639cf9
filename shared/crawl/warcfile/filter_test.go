package warcfile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/warcfile/warctest"
)

// TestFilterDropsAPageAndKeepsTheRestReadable drops one page of an assembled file: its response
// and its request record go, and warcio.js reads the new file (every digest, the warcinfo record
// first, each request beside its response) with an index made from it whose every line reads
// back its record. The kept pages decode at their new spans.
func TestFilterDropsAPageAndKeepsTheRestReadable(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)
	pages := samplePages(at)
	f, err := Assemble("batch.warc.gz", at, encodeAll(t, pages))
	if err != nil {
		t.Fatal(err)
	}
	gone := pages[1].URL
	out, kept, dropped, err := Filter(f.Data, func(r RecordInfo) bool { return r.TargetURI == gone && r.Type == "response" })
	if err != nil {
		t.Fatal(err)
	}
	if len(dropped) != 2 || dropped[0].Type != "response" || dropped[1].Type != "request" || dropped[0].Span != f.Spans[1] {
		t.Errorf("dropped %+v; want the response at %+v and its request", dropped, f.Spans[1])
	}
	if len(kept) != 6 || kept[0].Type != "warcinfo" {
		t.Errorf("kept %d records, the first %q; want 6, the warcinfo record first", len(kept), kept[0].Type)
	}
	if bytes.Contains(out, f.Data[f.Spans[1].Offset:f.Spans[1].Offset+f.Spans[1].Length]) {
		t.Error("the dropped response's bytes are still in the file")
	}
	for _, r := range kept {
		if r.Type != "response" {
			continue
		}
		p, err := Decode(out[r.Span.Offset : r.Span.Offset+r.Span.Length])
		if err != nil || p.URL != r.TargetURI || p.URL == gone {
			t.Errorf("kept response %s at %+v decodes as %q, %v", r.TargetURI, r.Span, p.URL, err)
		}
	}
	ix, err := IndexFile("batch.warc.gz", out)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "batch.warc.gz")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+IndexSuffix, ix, 0o644); err != nil {
		t.Fatal(err)
	}
	got := warctest.Check(t, path)
	want := warctest.Summary{Files: 1, Records: 6, Warcinfo: 1, Responses: 3, Requests: 2, IndexLines: 3, Resolved: 3}
	if got != want {
		t.Errorf("warcio.js saw %+v, want %+v", got, want)
	}
}

// TestFilterRefusesWhatIsNotAWARCFile: a file that is not WARC is an error, not an empty file.
func TestFilterRefusesWhatIsNotAWARCFile(t *testing.T) {
	if _, _, _, err := Filter([]byte("not a warc file\n"), func(RecordInfo) bool { return false }); err == nil {
		t.Error("Filter of a text file: no error")
	}
}
