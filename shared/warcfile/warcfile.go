// Package warcfile writes fetched pages as WARC 1.1 response records (with the nlnwa/gowarc
// library) and reads them back. Each record is its own gzip member, so one object in the blob store
// holds a whole batch of pages and any page can be read alone with a range request for its offset
// and length: one S3 PUT per fetch batch instead of one per page.
package warcfile

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/klauspost/compress/gzip"

	"github.com/nlnwa/gowarc/v3"
)

// ContentType is the media type of a WARC file.
const ContentType = "application/warc"

// Page is one fetched response.
type Page struct {
	URL       string // the final URL (WARC-Target-URI)
	Status    int
	Header    http.Header
	Body      []byte // decoded body
	FetchedAt time.Time
}

// Span is where a record sits in the encoded file.
type Span struct {
	Offset, Length int64
}

// Level is the gzip level of the records. BestSpeed costs a quarter of the default level's CPU
// for HTML that is only a little larger: compression was the fetch stage's largest cost.
const Level = gzip.BestSpeed

// gzipWriters are reused: a new gzip writer allocates about 1 MB of compressor state.
var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(io.Discard, Level) // Level is valid: no error
	return zw
}}

// Encode builds a .warc.gz file holding pages in order and returns where each record is.
func Encode(pages []Page) ([]byte, []Span, error) {
	records := make([][]byte, len(pages))
	for i, p := range pages {
		rec, err := EncodeRecord(p)
		if err != nil {
			return nil, nil, err
		}
		records[i] = rec
	}
	file, spans := Join(records)
	return file, spans, nil
}

// EncodeRecord builds the record of one page, compressed as a gzip member of its own. Records are
// encoded apart (in parallel, say) and Join puts them into one file.
func EncodeRecord(p Page) ([]byte, error) {
	rec, err := record(p)
	if err != nil {
		return nil, fmt.Errorf("warc record for %s: %w", p.URL, err)
	}
	defer rec.Close()
	var out bytes.Buffer
	out.Grow(len(p.Body)/3 + 1024) // BestSpeed shrinks HTML to about a quarter to a third
	zw := gzipWriters.Get().(*gzip.Writer)
	defer func() {
		zw.Reset(io.Discard) // do not keep the record alive in the pool, also after an error
		gzipWriters.Put(zw)
	}()
	zw.Reset(&out)
	if _, _, err := marshaler.Marshal(zw, rec, 0); err != nil {
		return nil, fmt.Errorf("write warc record for %s: %w", p.URL, err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compress warc record for %s: %w", p.URL, err)
	}
	return out.Bytes(), nil
}

// Join puts records (from EncodeRecord) into one .warc.gz file, in order, and returns where each
// one is.
func Join(records [][]byte) ([]byte, []Span) {
	size := 0
	for _, r := range records {
		size += len(r)
	}
	file := make([]byte, 0, size)
	spans := make([]Span, len(records))
	for i, r := range records {
		spans[i] = Span{Offset: int64(len(file)), Length: int64(len(r))}
		file = append(file, r...)
	}
	return file, spans
}

// unmarshalers are reused: each keeps a gzip reader, whose set-up is costly.
var unmarshalers = sync.Pool{New: func() any {
	optionsMu.Lock()
	defer optionsMu.Unlock()
	return gowarc.NewUnmarshaler()
}}

// maxSizeHint bounds the body size taken on trust from a record's Content-Length to preallocate.
const maxSizeHint = 64 << 20

// optionsMu serialises gowarc's constructors: each one builds its default options, which write a
// package-level setting of google/uuid (uuid.EnableRandPool), a data race when called concurrently.
var optionsMu sync.Mutex

func record(p Page) (gowarc.WarcRecord, error) {
	optionsMu.Lock()
	b := gowarc.NewRecordBuilder(gowarc.Response, gowarc.WithFixContentLength(true), gowarc.WithFixDigest(true),
		gowarc.WithAddMissingDigest(true), gowarc.WithRecordIdFunc(newRecordID),
		// The header fields are all set here, from a normalised URL and a time: checking each one
		// again (the URI with a WHATWG parser) was about a third of building the record.
		gowarc.WithSpecViolationPolicy(gowarc.ErrIgnore))
	optionsMu.Unlock()
	var head strings.Builder
	fmt.Fprintf(&head, "HTTP/1.1 %d %s\r\n", p.Status, http.StatusText(p.Status))
	if err := StoredHeader(p).Write(&head); err != nil {
		return nil, err
	}
	head.WriteString("\r\n")
	if _, err := b.WriteString(head.String()); err != nil {
		return nil, err
	}
	if _, err := b.Write(p.Body); err != nil {
		return nil, err
	}
	b.AddWarcHeader(gowarc.WarcTargetURI, p.URL)
	b.AddWarcHeaderTime(gowarc.WarcDate, p.FetchedAt.UTC())
	b.AddWarcHeader(gowarc.ContentType, "application/http;msgtype=response")
	rec, _, err := b.Build() // outside optionsMu: the record id is newRecordID's, not google/uuid's pool
	return rec, err
}

// newRecordID returns a random WARC-Record-ID (a version 4 UUID as a URN). It reads crypto/rand
// itself, so building records never reads the setting that gowarc's constructors write.
func newRecordID() (string, error) {
	id, err := uuid.NewRandomFromReader(rand.Reader)
	if err != nil {
		return "", fmt.Errorf("warc record id: %w", err)
	}
	return id.URN(), nil
}

// marshaler writes records; it holds no state, so one serves every goroutine.
var marshaler = gowarc.NewMarshaler()

// StoredHeader returns a copy of p's header as its record stores it, and as Decode returns it: the
// body is stored decoded, so the header claims no encoding and the body's own length.
func StoredHeader(p Page) http.Header {
	h := p.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Del("Content-Encoding")
	h.Del("Transfer-Encoding")
	h.Set("Content-Length", strconv.Itoa(len(p.Body)))
	return h
}

// Decode reads one record (a single gzip member, as a range request returns it).
func Decode(data []byte) (Page, error) {
	u := unmarshalers.Get().(gowarc.Unmarshaler)
	defer unmarshalers.Put(u) // deferred first, so it runs after the record is closed
	rec, _, _, err := u.Unmarshal(bufio.NewReader(bytes.NewReader(data)))
	if err != nil {
		return Page{}, fmt.Errorf("read warc record: %w", err)
	}
	defer rec.Close()
	if rec.Type() != gowarc.Response {
		return Page{}, fmt.Errorf("read warc record: type %s, want response", rec.Type())
	}
	blk, ok := rec.Block().(gowarc.HttpResponseBlock)
	if !ok {
		return Page{}, fmt.Errorf("read warc record: block is not an HTTP response")
	}
	payload, err := blk.PayloadBytes()
	if err != nil {
		return Page{}, fmt.Errorf("read warc payload: %w", err)
	}
	var buf bytes.Buffer
	if h := blk.HttpHeader(); h != nil {
		if n, err := strconv.Atoi(h.Get("Content-Length")); err == nil && n > 0 && n <= maxSizeHint {
			buf.Grow(n + bytes.MinRead) // Encode wrote the decoded length: one allocation for the body
		}
	}
	if _, err := buf.ReadFrom(payload); err != nil {
		return Page{}, fmt.Errorf("read warc payload: %w", err)
	}
	body := buf.Bytes()
	p := Page{URL: rec.WarcHeader().Get(gowarc.WarcTargetURI), Status: blk.HttpStatusCode(), Body: body}
	if h := blk.HttpHeader(); h != nil {
		p.Header = *h
	}
	if t, err := rec.WarcHeader().GetTime(gowarc.WarcDate); err == nil {
		p.FetchedAt = t
	}
	return p, nil
}
