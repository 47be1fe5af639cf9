package samples

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
)

// writeBlobs writes the objects under blobs/ that the samples refer to, and points the parse
// sample at the page's record, instead of checking them.
var writeBlobs = flag.Bool("write-blobs", false, "write blobs/ and the parse sample's WARC span")

// samplePage is the page the parse sample's WARC record holds.
func samplePage() warcfile.Page {
	body := `<!doctype html><html><head><title>Example</title></head><body>
<a href="/about">About</a> <a href="http://other.test/">elsewhere</a> <a href="/private/" rel="nofollow">private</a>
</body></html>
`
	return warcfile.Page{URL: SampleHost + "/", Status: 200, Body: []byte(body),
		Header:    http.Header{"Content-Type": {"text/html; charset=utf-8"}},
		FetchedAt: time.Date(2026, 11, 29, 20, 0, 1, 250_000_000, time.UTC)}
}

// TestBlobsHoldWhatTheSamplesReadFromTheBucket checks that blobs/ has every object a sample
// makes its handler read (crawl invoke puts them in the state's bucket), read back with the WARC
// reader: the seed file of s3-put-seed.json, and the page record of sqs-parse.json at its span.
func TestBlobsHoldWhatTheSamplesReadFromTheBucket(t *testing.T) {
	ev, err := SQS(SQSParse)
	if err != nil {
		t.Fatal(err)
	}
	var m message.Parse
	if err := json.Unmarshal([]byte(ev.Records[0].Body), &m); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(BlobsDir, filepath.FromSlash(m.WARC.Key))
	if *writeBlobs {
		writeSampleBlobs(t, path, m, ev.Records[0])
		return
	}
	f, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if m.WARC.Offset+m.WARC.Length > int64(len(f)) {
		t.Fatalf("the sample's span %d+%d is past the file's %d bytes", m.WARC.Offset, m.WARC.Length, len(f))
	}
	p, err := warcfile.Decode(f[m.WARC.Offset : m.WARC.Offset+m.WARC.Length])
	if err != nil {
		t.Fatalf("the record at the sample's span: %v", err)
	}
	if p.URL != m.URL || p.Status != m.Status || !bytes.Equal(p.Body, samplePage().Body) {
		t.Errorf("the record holds %s (%d), want the sample's %s (%d) and its page", p.URL, p.Status, m.URL, m.Status)
	}
	seed, err := os.ReadFile(filepath.Join(BlobsDir, "seeds", "my seeds.txt"))
	if err != nil || !strings.Contains(string(seed), SampleHost+"/") {
		t.Errorf("the seed file of %s: %q, %v", S3PutSeed, seed, err)
	}
}

// writeSampleBlobs writes the page's WARC file at path, and the span of its record into the
// parse sample (its body and the body's MD5).
func writeSampleBlobs(t *testing.T, path string, m message.Parse, rec events.SQSMessage) {
	b, spans, err := warcfile.Encode([]warcfile.Page{samplePage()})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(SQSParse)
	if err != nil {
		t.Fatal(err)
	}
	span := func(off, n int64) string { return fmt.Sprintf(`"offset":%d,"length":%d`, off, n) }
	body := strings.Replace(rec.Body, span(m.WARC.Offset, m.WARC.Length), span(spans[0].Offset, spans[0].Length), 1)
	sum := md5.Sum([]byte(body))
	escaped := func(s string) string { return strings.ReplaceAll(s, `"`, `\"`) }
	out := strings.Replace(string(raw), escaped(span(m.WARC.Offset, m.WARC.Length)), escaped(span(spans[0].Offset, spans[0].Length)), 1)
	out = strings.Replace(out, rec.Md5OfBody, hex.EncodeToString(sum[:]), 1)
	if err := os.WriteFile(SQSParse, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
}
