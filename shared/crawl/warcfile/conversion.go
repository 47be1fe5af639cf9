package warcfile

import (
	"bufio"
	"bytes"
	"fmt"
	"time"

	"github.com/nlnwa/gowarc/v3"
)

// Conversion is a page's content converted from its response record: the DOM a headless browser
// built after the page's scripts ran (shared/handler/renderer). It is stored as a WARC 1.1
// conversion record (section 6.8) that names the response record it was made from.
type Conversion struct {
	// URL is the page's final URL, the response record's WARC-Target-URI.
	URL string
	// RefersTo is the WARC-Record-ID of the response record ("<urn:uuid:...>", Page.RecordID).
	RefersTo string
	// At is when the conversion was made (its WARC-Date).
	At time.Time
	// ContentType is the media type of Body, such as "text/html; charset=utf-8".
	ContentType string
	Body        []byte
}

// EncodeConversion builds the conversion record of c, one gzip member. Its block is c.Body
// itself, so its WARC-Block-Digest and WARC-Payload-Digest are both the SHA-256 of c.Body.
func EncodeConversion(c Conversion) (Record, error) {
	if c.URL == "" || c.RefersTo == "" || c.At.IsZero() {
		return Record{}, fmt.Errorf("conversion record for %s: the URL, the record it refers to and the date are needed", c.URL)
	}
	b := newBuilder(gowarc.Conversion, "", len(c.Body))
	if _, err := b.Write(c.Body); err != nil {
		b.Close()
		return Record{}, fmt.Errorf("conversion record for %s: %w", c.URL, err)
	}
	b.AddWarcHeader(gowarc.WarcTargetURI, c.URL)
	b.AddWarcHeaderTime(gowarc.WarcDate, c.At.UTC())
	b.AddWarcHeader(gowarc.WarcRefersTo, c.RefersTo)
	b.AddWarcHeader(gowarc.ContentType, c.ContentType)
	rec, err := build(b)
	if err != nil {
		return Record{}, fmt.Errorf("conversion record for %s: %w", c.URL, err)
	}
	// A conversion record's block is its payload: the digest of the content, as for a response.
	digest := rec.WarcHeader().Get(gowarc.WarcBlockDigest)
	rec.WarcHeader().Set(gowarc.WarcPayloadDigest, digest)
	out := Record{entry: entry{url: c.URL, at: c.At.UTC(), mime: c.ContentType, digest: digest}}
	if out.Response, err = compress(rec, len(c.Body)/3+1024); err != nil {
		return Record{}, fmt.Errorf("write warc conversion record for %s: %w", c.URL, err)
	}
	return out, nil
}

// DecodeConversion reads one conversion record (a single gzip member, as a range request returns
// it).
func DecodeConversion(data []byte) (Conversion, error) {
	u := unmarshalers.Get().(gowarc.Unmarshaler)
	defer unmarshalers.Put(u)
	rec, _, _, err := u.Unmarshal(bufio.NewReader(bytes.NewReader(data)))
	if err != nil {
		return Conversion{}, fmt.Errorf("read warc record: %w", err)
	}
	defer rec.Close()
	if rec.Type() != gowarc.Conversion {
		return Conversion{}, fmt.Errorf("read warc record: type %s, want conversion", rec.Type())
	}
	raw, err := rec.Block().RawBytes()
	if err != nil {
		return Conversion{}, fmt.Errorf("read warc conversion block: %w", err)
	}
	var body bytes.Buffer
	if _, err := body.ReadFrom(raw); err != nil {
		return Conversion{}, fmt.Errorf("read warc conversion block: %w", err)
	}
	h := rec.WarcHeader()
	c := Conversion{URL: h.Get(gowarc.WarcTargetURI), RefersTo: h.Get(gowarc.WarcRefersTo), ContentType: h.Get(gowarc.ContentType),
		Body: body.Bytes()}
	if t, err := h.GetTime(gowarc.WarcDate); err == nil {
		c.At = t
	}
	return c, nil
}
