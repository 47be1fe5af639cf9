package httpfetch

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/andybalholm/brotli"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
)

// maxEncodings bounds how many stacked Content-Encodings are undone.
const maxEncodings = 2

// bodyBuffers hold bodies of unknown length while they are read: a buffer grown by doubling
// allocates about three times the body, and most pages come chunked or compressed. Buffers that
// grew past maxPooledBuffer are left to the collector.
var bodyBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledBuffer = 1 << 20

// readBody reads and decodes a response body, never holding more than the caps allow.
// It reports whether the body was truncated at lim.decoded.
func readBody(ctx context.Context, resp *http.Response, body *idleReader, lim limits) ([]byte, bool, error) {
	if resp.ContentLength > lim.raw {
		return nil, false, errclass.Errorf(errclass.TooLarge, "body of %d bytes is over the %d-byte limit", resp.ContentLength, lim.raw)
	}
	raw := &capReader{r: body, left: lim.raw, limit: lim.raw, what: "body"}
	var r io.Reader = raw
	codings := contentCodings(resp.Header)
	if len(codings) > maxEncodings {
		return nil, false, errclass.Errorf(errclass.Parse, "too many content codings: %q", resp.Header.Values("Content-Encoding"))
	}
	for i := len(codings) - 1; i >= 0; i-- {
		dec, err := decoder(codings[i], r)
		if err != nil {
			return nil, false, err
		}
		r = dec
	}
	rr := reserving(ctx, resp, r, body)
	if err := ahead(rr); err != nil {
		return nil, false, err
	}
	dcap := &capReader{r: rr, left: lim.decoded, limit: lim.decoded, what: "decoded body", truncate: lim.truncate}
	b, err := readAll(dcap, resp.ContentLength, lim.decoded, len(codings) == 0)
	if err != nil {
		// A decoder that wants more after the body ended cleanly was sent a truncated stream.
		truncatedStream := raw.eof && errors.Is(err, io.ErrUnexpectedEOF)
		if errclass.Of(err) == errclass.Internal && len(codings) > 0 && (truncatedStream || isCorrupt(err)) {
			return nil, false, errclass.Errorf(errclass.Parse, "decode %s body: %v", strings.Join(codings, ", "), err)
		}
		return nil, false, err
	}
	return b, dcap.truncated, nil
}

// readAll reads r to its end. A body of known length (size, not encoded) is read into a buffer
// of that size; any other into a pooled buffer, then copied out at its size.
func readAll(r io.Reader, size, max int64, plain bool) ([]byte, error) {
	if size > 0 && size <= max && plain {
		buf := bytes.NewBuffer(make([]byte, 0, size+bytes.MinRead)) // room for the read that sees EOF
		_, err := buf.ReadFrom(r)
		return buf.Bytes(), err
	}
	buf := bodyBuffers.Get().(*bytes.Buffer)
	buf.Reset()
	defer func() {
		if buf.Cap() <= maxPooledBuffer {
			bodyBuffers.Put(buf)
		}
	}()
	_, err := buf.ReadFrom(r)
	return bytes.Clone(buf.Bytes()), err
}

// contentCodings lists the codings to undo, outermost last, without "identity".
func contentCodings(h http.Header) []string {
	var out []string
	for _, v := range h.Values("Content-Encoding") {
		for _, c := range strings.Split(v, ",") {
			c = strings.ToLower(strings.TrimSpace(c))
			if c != "" && c != "identity" {
				out = append(out, c)
			}
		}
	}
	return out
}

// decoder returns a reader that undoes one content coding. An empty body stays empty.
func decoder(coding string, r io.Reader) (io.Reader, error) {
	br := bufio.NewReader(r)
	head, err := br.Peek(2)
	if len(head) == 0 {
		if err == io.EOF {
			return br, nil
		}
		return nil, err
	}
	switch coding {
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, corrupt(coding, err)
		}
		return zr, nil
	case "deflate":
		// RFC 9110 deflate is zlib-wrapped, but some servers send raw deflate.
		if len(head) == 2 && head[0]&0x0f == 8 && (uint16(head[0])<<8|uint16(head[1]))%31 == 0 {
			zr, err := zlib.NewReader(br)
			if err != nil {
				return nil, corrupt(coding, err)
			}
			return zr, nil
		}
		return flate.NewReader(br), nil
	case "br":
		return brotli.NewReader(br), nil
	}
	return nil, errclass.Errorf(errclass.Type, "unsupported content coding %q", coding)
}

func corrupt(coding string, err error) error {
	if errclass.Of(err) != errclass.Internal {
		return err // a cap or a timeout hit while reading the header
	}
	return errclass.Errorf(errclass.Parse, "decode %s body: %v", coding, err)
}

// isCorrupt reports whether err comes from a decoder rather than the connection.
func isCorrupt(err error) bool {
	var fe flate.CorruptInputError
	return errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) ||
		errors.Is(err, zlib.ErrChecksum) || errors.Is(err, zlib.ErrHeader) ||
		errors.As(err, &fe) || strings.HasPrefix(err.Error(), "brotli:")
}

// capReader fails with errclass.TooLarge as soon as more than limit bytes come through, or,
// with truncate, ends there as if the body ended.
type capReader struct {
	r         io.Reader
	left      int64
	limit     int64
	what      string
	truncate  bool
	truncated bool
	eof       bool // the underlying reader ended cleanly
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.left < 0 {
		return 0, c.err()
	}
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.r.Read(p)
	c.eof = c.eof || err == io.EOF
	c.left -= int64(n)
	if c.left < 0 {
		return n + int(c.left), c.err()
	}
	return n, err
}

func (c *capReader) err() error {
	if c.truncate {
		c.truncated = true
		return io.EOF
	}
	return errclass.New(errclass.TooLarge, fmt.Errorf("%s is over the %d-byte limit", c.what, c.limit))
}
