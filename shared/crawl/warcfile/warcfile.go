// Package warcfile writes fetched pages as WARC 1.1 files (with the nlnwa/gowarc library) and reads
// their records back. A file starts with a warcinfo record; each page has a response record,
// followed by the request record that fetched it. Each record is its own gzip member, so one object
// in the blob store holds a whole batch of pages and any page can be read alone with a range request
// for its offset and length: one S3 PUT per fetch batch instead of one per page. Each file has a
// CDXJ index (see Index), the form pywb and other replay tools read.
package warcfile

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
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
	// Truncated says the body was cut at the fetch's size limit: the record says so
	// (WARC-Truncated: length).
	Truncated bool
	// Request is the header of the GET that got the final response. A page with one gets a
	// request record after its response record; Decode returns none.
	Request http.Header
	// Revisit is set on a page Decode read from a revisit record (EncodeRevisit): its Body is
	// empty, and the payload is the record's it refers to.
	Revisit *Revisit
	// Digest is the page's WARC-Payload-Digest when it is known without hashing the body again:
	// Decode reads it from the record, and a writer that encoded the page may set it
	// (Record.PayloadDigest). Encoding ignores it. BodyDigest returns it, or computes it.
	Digest string
	// RecordID is the WARC-Record-ID of the response record Decode read the page from, which a
	// conversion record refers to (EncodeConversion); encoding ignores it.
	RecordID string
}

// BodyDigest returns p's payload digest (see PayloadDigest): p.Digest when it is one in that form,
// or else the digest of p.Body.
func (p Page) BodyDigest() string {
	if strings.HasPrefix(p.Digest, digestPrefix) && len(p.Digest) == len(digestPrefix)+2*sha256.Size {
		return p.Digest
	}
	return PayloadDigest(p.Body)
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

// Encode builds the records of pages, one after another with no warcinfo record, and returns
// where each page's response record is. Tests and benchmarks use it; a whole file is Assemble's.
func Encode(pages []Page) ([]byte, []Span, error) {
	records := make([][]byte, len(pages))
	for i, p := range pages {
		rec, err := EncodeRecord(p)
		if err != nil {
			return nil, nil, err
		}
		records[i] = rec.Response
	}
	file, spans := Join(records)
	return file, spans, nil
}

// Record is one page's records, each compressed as a gzip member of its own, and the page's line of
// the file's index.
type Record struct {
	Response []byte // the response record: the page's span in the file
	Request  []byte // the request record, or nil for a page without a request header
	entry    entry
}

// PayloadDigest is the WARC-Payload-Digest of the page's response or revisit record.
func (r Record) PayloadDigest() string { return r.entry.digest }

// EncodeRecord builds the records of one page. Records are encoded apart (in parallel, say) and
// Assemble puts them into one file.
func EncodeRecord(p Page) (Record, error) {
	resp, id, err := newResponse(p)
	if err != nil {
		return Record{}, err
	}
	out := Record{entry: entry{url: p.URL, at: p.FetchedAt.UTC(), mime: p.Header.Get("Content-Type"), status: p.Status,
		digest: resp.WarcHeader().Get(gowarc.WarcPayloadDigest)}}
	if out.Response, err = compress(resp, len(p.Body)/3+1024); err != nil { // BestSpeed shrinks HTML to about a quarter to a third
		return Record{}, fmt.Errorf("write warc record for %s: %w", p.URL, err)
	}
	return withRequest(out, p, id)
}

// newResponse builds p's response record with a new record id, and returns the id.
func newResponse(p Page) (gowarc.WarcRecord, string, error) {
	urn, err := newRecordID()
	if err != nil {
		return nil, "", err
	}
	id := "<" + urn + ">"
	resp, err := responseRecord(p, id)
	if err != nil {
		return nil, "", fmt.Errorf("warc record for %s: %w", p.URL, err)
	}
	return resp, id, nil
}

// withRequest adds to out the request record of p (none when p has no request header), concurrent
// to the record id.
func withRequest(out Record, p Page, id string) (Record, error) {
	if p.Request == nil {
		return out, nil
	}
	req, err := requestRecord(p, id)
	if err != nil {
		return Record{}, fmt.Errorf("warc request record for %s: %w", p.URL, err)
	}
	if out.Request, err = compress(req, 1024); err != nil {
		return Record{}, fmt.Errorf("write warc request record for %s: %w", p.URL, err)
	}
	return out, nil
}

// compress writes rec as one gzip member, and closes rec.
func compress(rec gowarc.WarcRecord, sizeHint int) ([]byte, error) {
	defer rec.Close()
	var out bytes.Buffer
	out.Grow(sizeHint)
	zw := gzipWriters.Get().(*gzip.Writer)
	defer func() {
		zw.Reset(io.Discard) // do not keep the record alive in the pool, also after an error
		gzipWriters.Put(zw)
	}()
	zw.Reset(&out)
	if _, _, err := marshaler.Marshal(zw, pooledCopy{rec}, 0); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compress: %w", err)
	}
	return out.Bytes(), nil
}

// pooledCopy is a record whose block the marshaler copies with a reused buffer. gowarc's marshaler
// copies a block with io.Copy, and the io.MultiReader that its HTTP blocks return allocates a new
// 32 KiB buffer for each copy: two a page, 22% of the bytes a crawl allocated (docs/bench-history.md,
// rounds fifteen and seventeen).
type pooledCopy struct{ gowarc.WarcRecord }

func (r pooledCopy) Block() gowarc.Block { return pooledBlock{r.WarcRecord.Block()} }

// pooledBlock is a block whose RawBytes reader copies itself with a buffer from copyBuffers.
type pooledBlock struct{ gowarc.Block }

func (b pooledBlock) RawBytes() (io.Reader, error) {
	r, err := b.Block.RawBytes()
	if err != nil {
		return nil, err
	}
	return pooledReader{r}, nil
}

// pooledReader reads r, and writes it with a pooled buffer when copied (io.Copy calls WriteTo).
type pooledReader struct{ r io.Reader }

func (p pooledReader) Read(b []byte) (int, error) { return p.r.Read(b) }

func (p pooledReader) WriteTo(w io.Writer) (int64, error) {
	buf := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(buf)
	return io.CopyBuffer(w, struct{ io.Reader }{p.r}, *buf) // the struct hides r's own WriteTo
}

// copyBuffers are the buffers pooledReader copies with, of io.Copy's size.
var copyBuffers = sync.Pool{New: func() any {
	b := make([]byte, 32<<10)
	return &b
}}

// Join puts records into one file, in order, and returns where each one is.
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

// newBuilder returns a record builder that adds the Content-Length, with its spec-violation
// policy at ErrIgnore: the default policy (ErrWarn) validates every header field of every record,
// parsing WARC-Target-URI with a WHATWG URL parser, which cost a tenth of the encoding's CPU for
// findings that build dropped anyway. The digests are build's. size is the block's length: the
// builder keeps that much in memory (its default, 1 MB, spilled a larger page to a temporary file)
// and allocates no more than that up front (its default, 16 KiB, was 40 times a request record).
func newBuilder(t gowarc.RecordType, id string, size int) gowarc.WarcRecordBuilder {
	optionsMu.Lock()
	defer optionsMu.Unlock()
	b := gowarc.NewRecordBuilder(t, gowarc.WithSpecViolationPolicy(gowarc.ErrIgnore),
		gowarc.WithAddMissingDigest(false), gowarc.WithRecordIdFunc(newRecordID),
		gowarc.WithBufferMaxMemBytes(int64(max(size, 1))))
	if id != "" {
		b.AddWarcHeader(gowarc.WarcRecordID, id)
	}
	return b
}

// build finishes a record (outside optionsMu: the record id is newRecordID's, not google/uuid's
// pool) and sets its WARC-Block-Digest and, for an HTTP message, its WARC-Payload-Digest. gowarc
// computes both in one read of the block: under ErrIgnore it does not read the block itself, and
// its missing-digest option would write the digest of the HTTP header alone, so build asks the
// block for them. The block stays readable for the marshaler: its buffer is seekable.
func build(b gowarc.WarcRecordBuilder) (gowarc.WarcRecord, error) {
	rec, _, err := b.Build()
	if err != nil {
		return nil, err
	}
	blk := rec.Block()
	rec.WarcHeader().Set(gowarc.WarcBlockDigest, blk.BlockDigest())
	if p, ok := blk.(gowarc.PayloadBlock); ok {
		rec.WarcHeader().Set(gowarc.WarcPayloadDigest, p.PayloadDigest())
	}
	return rec, nil
}

// responseRecord builds p's response record, with the record id id.
func responseRecord(p Page, id string) (gowarc.WarcRecord, error) {
	fields := []string{gowarc.ContentType, "application/http;msgtype=response"}
	if p.Truncated {
		fields = append(fields, gowarc.WarcTruncated, "length")
	}
	status := fmt.Sprintf("HTTP/1.1 %d %s", p.Status, http.StatusText(p.Status))
	return httpRecord(gowarc.Response, id, p, status, StoredHeader(p), p.Body, fields...)
}

// RedactedValue is what a request record holds in place of a secret header's value: the header's
// name is kept, so that a reader sees that the request carried it.
const RedactedValue = "[redacted]"

// credentialHeaders are the request headers that carry credentials, redacted in every request
// record whoever set them.
var credentialHeaders = []string{"Authorization", "Cookie", "Proxy-Authorization"}

// Redacted returns a copy of the request header h with the values of the headers that carry
// credentials, and of the headers named in secret (canonical names), replaced by RedactedValue.
func Redacted(h http.Header, secret ...string) http.Header {
	out := h.Clone()
	for _, name := range append(slices.Clip(credentialHeaders), secret...) {
		if vs, ok := out[name]; ok {
			for i := range vs {
				vs[i] = RedactedValue
			}
		}
	}
	return out
}

// requestRecord builds the request record of p, concurrent to the response record responseID.
func requestRecord(p Page, responseID string) (gowarc.WarcRecord, error) {
	u, err := url.Parse(p.URL)
	if err != nil {
		return nil, fmt.Errorf("request target: %w", err)
	}
	h := Redacted(p.Request)
	h.Set("Host", u.Host)
	return httpRecord(gowarc.Request, "", p, "GET "+u.RequestURI()+" HTTP/1.1", h, nil,
		gowarc.WarcConcurrentTo, responseID, gowarc.ContentType, "application/http;msgtype=request")
}

// httpRecord builds a record of type t about p whose block is an HTTP message (its first line,
// header and body), with the WARC header fields given as name, value pairs.
func httpRecord(t gowarc.RecordType, id string, p Page, first string, header http.Header, body []byte, fields ...string) (gowarc.WarcRecord, error) {
	var head strings.Builder
	head.WriteString(first + "\r\n")
	if err := header.Write(&head); err != nil {
		return nil, err
	}
	head.WriteString("\r\n")
	b := newBuilder(t, id, head.Len()+len(body))
	if _, err := b.WriteString(head.String()); err != nil {
		b.Close()
		return nil, err
	}
	if _, err := b.Write(body); err != nil {
		b.Close()
		return nil, err
	}
	b.AddWarcHeader(gowarc.WarcTargetURI, p.URL)
	b.AddWarcHeaderTime(gowarc.WarcDate, p.FetchedAt.UTC())
	for i := 0; i+1 < len(fields); i += 2 {
		b.AddWarcHeader(fields[i], fields[i+1])
	}
	return build(b)
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
	if rec.Type() == gowarc.Revisit {
		return decodeRevisit(rec)
	}
	if rec.Type() != gowarc.Response {
		return Page{}, fmt.Errorf("read warc record: type %s, want response or revisit", rec.Type())
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
	p := Page{URL: rec.WarcHeader().Get(gowarc.WarcTargetURI), Status: blk.HttpStatusCode(), Body: body,
		Digest: rec.WarcHeader().Get(gowarc.WarcPayloadDigest), RecordID: rec.WarcHeader().Get(gowarc.WarcRecordID)}
	if h := blk.HttpHeader(); h != nil {
		p.Header = *h
	}
	if t, err := rec.WarcHeader().GetTime(gowarc.WarcDate); err == nil {
		p.FetchedAt = t
	}
	return p, nil
}
