package warcfile

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nlnwa/gowarc/v3"
)

func TestEncodeDecodeByRange(t *testing.T) {
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	pages := []Page{
		{URL: "http://a.test/", Status: 200, Header: http.Header{"Content-Type": {"text/html"}, "Content-Encoding": {"gzip"}},
			Body: []byte("<html><title>A</title></html>"), FetchedAt: at},
		{URL: "http://a.test/empty", Status: 204, Header: http.Header{}, Body: nil, FetchedAt: at},
		{URL: "http://a.test/big", Status: 404, Header: http.Header{"Content-Type": {"text/plain; charset=utf-8"}},
			Body: bytes.Repeat([]byte("x\r\n\r\n"), 50_000), FetchedAt: at.Add(time.Second)},
	}
	file, spans, err := Encode(pages)
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != len(pages) {
		t.Fatalf("got %d spans, want %d", len(spans), len(pages))
	}
	for i, want := range pages {
		s := spans[i]
		got, err := Decode(file[s.Offset : s.Offset+s.Length])
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if got.URL != want.URL || got.Status != want.Status || !bytes.Equal(got.Body, want.Body) || !got.FetchedAt.Equal(want.FetchedAt) {
			t.Errorf("record %d = %s %d %d bytes %v, want %s %d %d bytes %v", i, got.URL, got.Status, len(got.Body),
				got.FetchedAt, want.URL, want.Status, len(want.Body), want.FetchedAt)
		}
		if got.Header.Get("Content-Encoding") != "" {
			t.Errorf("record %d keeps Content-Encoding though the body is stored decoded", i)
		}
		if ct := want.Header.Get("Content-Type"); got.Header.Get("Content-Type") != ct {
			t.Errorf("record %d content type = %q, want %q", i, got.Header.Get("Content-Type"), ct)
		}
		if stored := StoredHeader(want); !reflect.DeepEqual(got.Header, stored) {
			t.Errorf("record %d header = %v, but StoredHeader says %v", i, got.Header, stored)
		}
	}
	// The whole file is a valid multi-member gzip stream of WARC records.
	if n := strings.Count(gunzip(t, file), "WARC/1.1\r\n"); n != 3 {
		t.Errorf("file holds %d WARC records, want 3", n)
	}
}

func TestDecodeRejectsGarbage(t *testing.T) {
	for _, in := range [][]byte{nil, []byte("WARC/1.1\r\nnonsense"), {0x1f, 0x8b, 0, 0}} {
		if _, err := Decode(in); err == nil {
			t.Errorf("Decode(%q) accepted garbage", in)
		}
	}
}

// TestConcurrentUse runs under -race: gowarc's constructors touch a package-level setting.
func TestConcurrentUse(t *testing.T) {
	page := Page{URL: "http://a.test/", Status: 200, Header: http.Header{}, Body: []byte("hi")}
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			file, spans, err := Encode([]Page{page})
			if err == nil {
				_, err = Decode(file[spans[0].Offset : spans[0].Offset+spans[0].Length])
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestRecordsCarryTheirIDsAndDigests checks the fields the record builder fills in: a fresh
// urn:uuid record id each time, and both SHA-256 digests, for a small body and for one of 4 MB
// (larger than the builder's default memory buffer).
func TestRecordsCarryTheirIDsAndDigests(t *testing.T) {
	for _, body := range []string{"<p>hi</p>", strings.Repeat("<p>hi</p>\r\n\r\n", 300_000)} {
		t.Run(fmt.Sprintf("%d bytes", len(body)), func(t *testing.T) {
			page := Page{URL: "http://a.test/a?b=c", Status: 200, Header: http.Header{"Content-Type": {"text/html"}},
				Body: []byte(body), FetchedAt: time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)}
			ids := map[string]bool{}
			for range 2 {
				rec, err := EncodeRecord(page)
				if err != nil {
					t.Fatal(err)
				}
				text := gunzip(t, rec.Response)
				head, block, _ := strings.Cut(text, "\r\n\r\n")
				fields := map[string]string{}
				for _, line := range strings.Split(head, "\r\n")[1:] {
					name, value, _ := strings.Cut(line, ": ")
					fields[name] = value
				}
				id := fields["WARC-Record-ID"]
				if !strings.HasPrefix(id, "<urn:uuid:") || len(id) != len("<urn:uuid:>")+36 {
					t.Errorf("WARC-Record-ID = %q, want <urn:uuid:...>", id)
				}
				ids[id] = true
				block = strings.TrimSuffix(block, "\r\n\r\n") // the record's end
				_, payload, _ := strings.Cut(block, "\r\n\r\n")
				for name, want := range map[string]string{"WARC-Block-Digest": sha256Hex(block), "WARC-Payload-Digest": sha256Hex(body),
					"Content-Length": strconv.Itoa(len(block))} {
					if fields[name] != want {
						t.Errorf("%s = %q, want %q", name, fields[name], want)
					}
				}
				if payload != body {
					t.Errorf("payload is %d bytes, want the body's %d", len(payload), len(body))
				}
				if got := PayloadDigest([]byte(body)); got != fields["WARC-Payload-Digest"] {
					t.Errorf("PayloadDigest = %q, the record (gowarc) says %q", got, fields["WARC-Payload-Digest"])
				}
				if fields["WARC-Target-URI"] != page.URL {
					t.Errorf("WARC-Target-URI = %q, want %q", fields["WARC-Target-URI"], page.URL)
				}
			}
			if len(ids) != 2 {
				t.Errorf("two records share the id %v", ids)
			}
		})
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// gunzip returns the text of every gzip member in b.
func gunzip(t *testing.T, b []byte) string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	all, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return string(all)
}

// TestDecodeKnowsTheBodysDigest: a decoded page carries its record's payload digest, which is the
// SHA-256 of its body as the standard library computes it, so parse need not hash the body again;
// BodyDigest hashes a body whose digest is missing or not in that form.
func TestDecodeKnowsTheBodysDigest(t *testing.T) {
	body := []byte("<html><title>A</title><p>" + strings.Repeat("x", 5000) + "</p></html>")
	sum := sha256.Sum256(body)
	want := "sha256:" + hex.EncodeToString(sum[:])
	rec, err := EncodeRecord(Page{URL: "http://a.test/", Status: 200, Header: http.Header{"Content-Type": {"text/html"}},
		Body: body, FetchedAt: time.Now(), Request: http.Header{"User-Agent": {"t"}}})
	if err != nil {
		t.Fatal(err)
	}
	if rec.PayloadDigest() != want {
		t.Errorf("record's payload digest = %q, want %q", rec.PayloadDigest(), want)
	}
	got, err := Decode(rec.Response)
	if err != nil {
		t.Fatal(err)
	}
	if got.Digest != want || got.BodyDigest() != want {
		t.Errorf("decoded digest = %q, BodyDigest %q, want %q", got.Digest, got.BodyDigest(), want)
	}
	for _, d := range []string{"", "sha1:" + hex.EncodeToString(sum[:20]), "sha256:" + hex.EncodeToString(sum[:16]), "md5:x"} {
		if got := (Page{Body: body, Digest: d}).BodyDigest(); got != want {
			t.Errorf("BodyDigest with Digest %q = %q, want the body's %q", d, got, want)
		}
	}
}

// TestThePooledCopyWritesWhatGowarcWrites marshals the same response and request records with
// gowarc's marshaler as it is and with the reused copy buffer (pooledCopy): the bytes must match,
// but for the request record's random id. A page larger than the buffer makes the copy take
// several rounds.
func TestThePooledCopyWritesWhatGowarcWrites(t *testing.T) {
	for _, size := range []int{0, 100, 20 << 10, 100 << 10} {
		p := benchPages()[0]
		p.Body = bytes.Repeat([]byte("<p>a</p>"), size/8)
		for i, build := range []func(Page, string) (gowarc.WarcRecord, error){responseRecord, requestRecord} {
			var want, got bytes.Buffer
			for _, out := range []struct {
				w    *bytes.Buffer
				wrap func(gowarc.WarcRecord) gowarc.WarcRecord
			}{{&want, func(r gowarc.WarcRecord) gowarc.WarcRecord { return r }}, {&got, func(r gowarc.WarcRecord) gowarc.WarcRecord { return pooledCopy{r} }}} {
				rec, err := build(p, "<urn:uuid:00000000-0000-4000-8000-000000000000>")
				if err != nil {
					t.Fatal(err)
				}
				if _, _, err := marshaler.Marshal(out.w, out.wrap(rec), 0); err != nil {
					t.Fatalf("%d-byte body: %v", size, err)
				}
				rec.Close()
			}
			w, g := withoutRecordID(want.Bytes()), withoutRecordID(got.Bytes())
			if (i == 0 && !bytes.Contains(w, p.Body)) || !bytes.Equal(g, w) {
				t.Errorf("%d-byte body: the pooled copy wrote %d bytes, gowarc %d; equal: %v", size, len(g), len(w), bytes.Equal(g, w))
			}
		}
	}
}

// withoutRecordID is a marshaled record without its WARC-Record-ID line.
func withoutRecordID(rec []byte) []byte {
	var out []byte
	for line := range bytes.Lines(rec) {
		if !bytes.HasPrefix(line, []byte(gowarc.WarcRecordID+":")) {
			out = append(out, line...)
		}
	}
	return out
}
