package httpfetch

import (
	"context"
	"io"
	"net/http"
	"time"
)

// Reserve is asked for room before a body read with WithReserve holds more than its allowance:
// read is the decoded bytes read so far, and size the body's decoded size when the response tells
// it (a Content-Length without a content coding), or -1. It returns the new allowance, or an error
// that ends the GET. The bytes of one read past the allowance are in hand when it is asked.
type Reserve func(ctx context.Context, read, size int64) (allowance int64, err error)

type reserveKey struct{}

type reserveOptions struct {
	allowance int64
	reserve   Reserve
}

// WithReserve has the bodies of the GETs made with ctx ask reserve for room once they pass
// allowance decoded bytes: a caller that shares a memory budget between many GETs holds little
// for a small page and waits for room only for a large one. The time spent in reserve counts
// against the total timeout, not against the body's minimum rate.
func WithReserve(ctx context.Context, allowance int64, reserve Reserve) context.Context {
	return context.WithValue(ctx, reserveKey{}, reserveOptions{allowance: allowance, reserve: reserve})
}

// reserving wraps r, the decoded body of resp, to ask the Reserve of ctx for room (WithReserve);
// without one it returns r. body is the raw body's idle reader, whose rate clock stops while the
// Reserve is asked.
func reserving(ctx context.Context, resp *http.Response, r io.Reader, body *idleReader) io.Reader {
	o, ok := ctx.Value(reserveKey{}).(reserveOptions)
	if !ok || o.reserve == nil {
		return r
	}
	size := int64(-1)
	if len(contentCodings(resp.Header)) == 0 && resp.ContentLength >= 0 {
		size = resp.ContentLength
	}
	return &reserveReader{ctx: ctx, r: r, o: o, size: size, body: body}
}

type reserveReader struct {
	ctx  context.Context
	r    io.Reader
	o    reserveOptions
	size int64
	read int64
	body *idleReader
}

// ahead asks for room before a body of known size over the allowance is read: its buffer is made
// at that size before the first read.
func ahead(r io.Reader) error {
	rr, ok := r.(*reserveReader)
	if !ok || rr.size <= rr.o.allowance {
		return nil
	}
	return rr.ask()
}

func (rr *reserveReader) Read(p []byte) (int, error) {
	n, err := rr.r.Read(p)
	rr.read += int64(n)
	if rr.read > rr.o.allowance {
		if rerr := rr.ask(); rerr != nil {
			return n, rerr
		}
	}
	return n, err
}

// ask asks the Reserve for room, and takes the allowance it gives.
func (rr *reserveReader) ask() error {
	start := time.Now()
	allowance, err := rr.o.reserve(rr.ctx, rr.read, rr.size)
	if rr.body != nil && !rr.body.start.IsZero() {
		rr.body.start = rr.body.start.Add(time.Since(start)) // the wait is not the server's
	}
	if err != nil {
		return err
	}
	rr.o.allowance = allowance
	return nil
}
