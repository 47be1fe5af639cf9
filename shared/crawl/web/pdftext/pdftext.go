// Package pdftext reads the text, metadata and links of a PDF response, through
// github.com/ledongthuc/pdf (a pure-Go reader: no cgo, under 0.5 MB in a Lambda binary), within
// bounds that hold on hostile input: a size cap before it is read, a cap on the text and pages
// read, a deadline that every read of the file checks (a PDF that runs past it fails on its next
// read), and a panic in the library recovered into an error.
//
// The library reads PDF 1.0 to 1.7 (not 2.0) and the standard encryption with an empty user
// password; a PDF it cannot read is an error that says why, never a crash.
package pdftext

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/ledongthuc/pdf"

	"github.com/crawlstack/crawlstack/shared/crawl/web/doctype"
)

// Limits bound what one PDF may take.
type Limits struct {
	// MaxBytes refuses a larger PDF unread (0: DefaultMaxBytes).
	MaxBytes int
	// MaxTextBytes caps the text kept (0: doctype.MaxTextBytes); reading stops there.
	MaxTextBytes int
	// MaxPages caps the pages whose text and links are read (0: DefaultMaxPages).
	MaxPages int
	// MaxLinks caps the links kept (0: DefaultMaxLinks).
	MaxLinks int
	// Timeout bounds the time the PDF is read for (0: DefaultTimeout).
	Timeout time.Duration
}

// Defaults of Limits.
const (
	DefaultMaxBytes = 20 << 20
	DefaultMaxPages = 2000
	DefaultMaxLinks = 1000
	DefaultTimeout  = 10 * time.Second
)

func (l Limits) orDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxTextBytes <= 0 {
		l.MaxTextBytes = doctype.MaxTextBytes
	}
	if l.MaxPages <= 0 {
		l.MaxPages = DefaultMaxPages
	}
	if l.MaxLinks <= 0 {
		l.MaxLinks = DefaultMaxLinks
	}
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	return l
}

// Doc is what a PDF holds.
type Doc struct {
	// Text is the text of its pages, in page order, a newline between text objects, cut at
	// Limits.MaxTextBytes (Truncated says so; as it does when pages past MaxPages were not read).
	Text      string
	Truncated bool
	// The document information dictionary's entries ("" where absent).
	Title, Author, Subject, Keywords, Creator, Producer string
	// Created and Modified are its dates in RFC 3339, or as written when they do not parse.
	Created, Modified string
	// Pages is its page count.
	Pages int
	// Links are the http(s) URIs of its link annotations, resolved against the PDF's URL, each once.
	Links []string
}

// ErrTooLarge is the error of a PDF over Limits.MaxBytes.
var ErrTooLarge = errors.New("pdf over the size limit")

// Extract reads the PDF body, fetched from base, within lim.
func Extract(ctx context.Context, body []byte, base *url.URL, lim Limits) (Doc, error) {
	lim = lim.orDefaults()
	if len(body) > lim.MaxBytes {
		return Doc{}, fmt.Errorf("%w: %d bytes, over %d", ErrTooLarge, len(body), lim.MaxBytes)
	}
	ctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	type result struct {
		doc Doc
		err error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		defer func() {
			if p := recover(); p != nil {
				r = result{err: fmt.Errorf("the pdf reader failed: %v", p)}
			}
			done <- r
		}()
		r.doc, r.err = read(&deadlineReader{ctx: ctx, r: bytes.NewReader(body)}, int64(len(body)), base, lim)
	}()
	select {
	case r := <-done:
		if r.err != nil && ctx.Err() != nil {
			return Doc{}, fmt.Errorf("read the pdf: over its time limit of %s: %w", lim.Timeout, ctx.Err())
		}
		return r.doc, r.err
	case <-ctx.Done():
		// The reader stops at its next read of the file, which fails now.
		return Doc{}, fmt.Errorf("read the pdf: over its time limit of %s: %w", lim.Timeout, ctx.Err())
	}
}

// deadlineReader fails every read once ctx is done, which stops the library wherever it is.
type deadlineReader struct {
	ctx context.Context
	r   io.ReaderAt
}

func (d *deadlineReader) ReadAt(p []byte, off int64) (int, error) {
	if err := d.ctx.Err(); err != nil {
		return 0, err
	}
	return d.r.ReadAt(p, off)
}

// read reads the PDF in f, of size bytes. The library panics on malformed input: Extract
// recovers.
func read(f io.ReaderAt, size int64, base *url.URL, lim Limits) (Doc, error) {
	r, err := pdf.NewReader(f, size)
	if err != nil {
		return Doc{}, fmt.Errorf("read the pdf: %w", err)
	}
	info := r.Trailer().Key("Info")
	d := Doc{
		Title: clean(info.Key("Title").Text()), Author: clean(info.Key("Author").Text()),
		Subject: clean(info.Key("Subject").Text()), Keywords: clean(info.Key("Keywords").Text()),
		Creator: clean(info.Key("Creator").Text()), Producer: clean(info.Key("Producer").Text()),
		Created: date(info.Key("CreationDate").Text()), Modified: date(info.Key("ModDate").Text()),
		Pages: r.NumPage(),
	}
	t := &textWriter{max: lim.MaxTextBytes}
	seen := map[string]bool{}
	for i := 1; i <= d.Pages; i++ {
		if i > lim.MaxPages {
			t.full = true
			break
		}
		p := r.Page(i)
		if p.V.IsNull() {
			continue
		}
		for _, l := range pageLinks(p, base) {
			if !seen[l] && len(d.Links) < lim.MaxLinks {
				seen[l] = true
				d.Links = append(d.Links, l)
			}
		}
		if !t.full {
			if err := pageText(p, t); err != nil {
				return Doc{}, fmt.Errorf("read the text of page %d: %w", i, err)
			}
		}
	}
	d.Text, d.Truncated = strings.TrimSpace(t.b.String()), t.full
	return d, nil
}

// clean is a metadata string without its control characters and its surrounding space.
func clean(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f || r == 0xfffd {
			return -1
		}
		return r
	}, s)
	s, _ = doctype.Cut(strings.TrimSpace(s), 4<<10)
	return s
}

// date is a PDF date (D:YYYYMMDDHHmmSSOHH'mm', every part after the year optional) in RFC 3339,
// or the text as written when it is not one.
func date(s string) string {
	s = clean(s)
	v := strings.TrimPrefix(s, "D:")
	v = strings.ReplaceAll(strings.TrimSuffix(v, "'"), "'", ":")
	for _, layout := range []string{"20060102150405Z07:00", "20060102150405Z0700", "20060102150405Z", "20060102150405", "200601021504", "2006010215", "20060102", "200601", "2006"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.Format(time.RFC3339)
		}
	}
	return s
}
