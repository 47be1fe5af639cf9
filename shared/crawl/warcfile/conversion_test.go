package warcfile

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/warcfile/warctest"
)

// TestConversionRecordsPassAnIndependentReader writes a fetch batch's file and a render step's file
// of conversion records that refer to its responses, and has warcio.js check both: each
// conversion's digests against the SHA-256 of its block (computed here too, apart from the
// writer), its WARC-Refers-To against the response record of the same URI, and the index lines.
func TestConversionRecordsPassAnIndependentReader(t *testing.T) {
	at := time.Date(2026, 12, 5, 9, 30, 0, 0, time.UTC)
	pages := samplePages(at)[:2]
	fetched, err := Assemble("fetched.warc.gz", at, encodeAll(t, pages))
	if err != nil {
		t.Fatal(err)
	}
	var convs []Conversion
	var recs []Record
	for i, s := range fetched.Spans {
		p, err := Decode(fetched.Data[s.Offset : s.Offset+s.Length])
		if err != nil {
			t.Fatal(err)
		}
		if p.RecordID == "" {
			t.Fatalf("page %d decodes with no record id", i)
		}
		c := Conversion{URL: p.URL, RefersTo: p.RecordID, At: at.Add(time.Second), ContentType: "text/html; charset=utf-8",
			Body: append([]byte("<html><body>rendered "), append(p.Body, []byte("</body></html>")...)...)}
		r, err := EncodeConversion(c)
		if err != nil {
			t.Fatal(err)
		}
		convs, recs = append(convs, c), append(recs, r)
	}
	rendered, err := Assemble("rendered.warc.gz", at, recs)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var paths []string
	for name, f := range map[string]File{"fetched.warc.gz": fetched, "rendered.warc.gz": rendered} {
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
	want := warctest.Summary{Files: 2, Records: 8, Warcinfo: 2, Responses: 2, Requests: 2, Conversions: 2, IndexLines: 4,
		Resolved: 4, ConversionsResolved: 2}
	if got != want {
		t.Errorf("warcio.js saw %+v, want %+v", got, want)
	}
	// Each conversion read alone, by its span, as parse reads it: warcio.js and the digest of the
	// body computed here agree, and DecodeConversion gives back what was written.
	for i, s := range rendered.Spans {
		one := filepath.Join(dir, "one.warc.gz")
		if err := os.WriteFile(one, rendered.Data[s.Offset:s.Offset+s.Length], 0o644); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(convs[i].Body)
		digest := "sha256:" + hex.EncodeToString(sum[:])
		read := warctest.Read(t, one)[one]
		if len(read) != 1 || read[0].Type != "conversion" || read[0].URI != convs[i].URL || read[0].PayloadDigest != digest || !read[0].BlockDigestOK {
			t.Errorf("conversion %d: warcio.js read %+v, want one conversion of %s with digest %s", i, read, convs[i].URL, digest)
		}
		c, err := DecodeConversion(rendered.Data[s.Offset : s.Offset+s.Length])
		if err != nil {
			t.Fatalf("conversion %d: %v", i, err)
		}
		if c.URL != convs[i].URL || c.RefersTo != convs[i].RefersTo || !bytes.Equal(c.Body, convs[i].Body) || !c.At.Equal(convs[i].At) ||
			c.ContentType != convs[i].ContentType {
			t.Errorf("conversion %d decodes as %s %s %s %q with %d body bytes, want %s %s %s %q with %d", i, c.URL, c.RefersTo, c.At, c.ContentType,
				len(c.Body), convs[i].URL, convs[i].RefersTo, convs[i].At, convs[i].ContentType, len(convs[i].Body))
		}
	}
	if _, err := DecodeConversion(fetched.Data[fetched.Spans[0].Offset : fetched.Spans[0].Offset+fetched.Spans[0].Length]); err == nil {
		t.Error("a response record decodes as a conversion")
	}
}

func TestEncodeConversionRefusesWhatItCannotClaim(t *testing.T) {
	at := time.Date(2026, 12, 5, 9, 30, 0, 0, time.UTC)
	ok := Conversion{URL: "http://a.test/", RefersTo: "<urn:uuid:6e4ad4b8-0d0f-4f5e-9b53-0f2d1c1b5a11>", At: at, ContentType: "text/html", Body: []byte("<p>")}
	for name, c := range map[string]Conversion{
		"no url":       {RefersTo: ok.RefersTo, At: at, Body: ok.Body},
		"no refers-to": {URL: ok.URL, At: at, Body: ok.Body},
		"no date":      {URL: ok.URL, RefersTo: ok.RefersTo, Body: ok.Body},
	} {
		if _, err := EncodeConversion(c); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := EncodeConversion(ok); err != nil {
		t.Errorf("a good conversion: %v", err)
	}
}
