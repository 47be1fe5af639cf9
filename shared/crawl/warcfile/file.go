package warcfile

import (
	"fmt"
	"strings"
	"time"

	"github.com/nlnwa/gowarc/v3"
)

// File is one assembled WARC file and its CDXJ index.
type File struct {
	Data  []byte // the .warc.gz file: a warcinfo record, then each page's response and request records
	Spans []Span // where each page's response record is in Data, in the order of the records given (zero: none)
	Index []byte // the CDXJ index of Data (see Index)
}

// Software names the crawler in each file's warcinfo record.
const Software = "crawlstack (github.com/crawlstack/crawlstack)"

// Assemble puts the records of a batch's pages (from EncodeRecord) into one file named name (its
// WARC-Filename, and the filename its index gives), written at.
func Assemble(name string, at time.Time, records []Record) (File, error) {
	info, err := warcinfo(name, at)
	if err != nil {
		return File{}, fmt.Errorf("warcinfo record of %s: %w", name, err)
	}
	parts := make([][]byte, 0, 1+2*len(records))
	parts = append(parts, info)
	for _, r := range records {
		if r.Response == nil {
			continue // a page with no record (a recrawl's, skipped by its sitemap's lastmod)
		}
		parts = append(parts, r.Response)
		if r.Request != nil {
			parts = append(parts, r.Request)
		}
	}
	data, all := Join(parts)
	spans := make([]Span, len(records))
	entries := make([]entry, 0, len(records))
	next := 1
	for i, r := range records {
		if r.Response == nil {
			continue // its span stays zero
		}
		spans[i] = all[next]
		next++
		if r.Request != nil {
			next++
		}
		e := r.entry
		e.span = spans[i]
		entries = append(entries, e)
	}
	return File{Data: data, Spans: spans, Index: index(name, entries)}, nil
}

// warcinfo builds the record that opens a file: what wrote it, and to which standard.
func warcinfo(name string, at time.Time) ([]byte, error) {
	var fields strings.Builder
	fmt.Fprintf(&fields, "software: %s\r\n", Software)
	fields.WriteString("format: WARC File Format 1.1\r\n")
	fields.WriteString("conformsTo: https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/\r\n")
	b := newBuilder(gowarc.Warcinfo, "", fields.Len())
	if _, err := b.WriteString(fields.String()); err != nil {
		b.Close()
		return nil, err
	}
	b.AddWarcHeader(gowarc.WarcFilename, name)
	b.AddWarcHeaderTime(gowarc.WarcDate, at.UTC())
	b.AddWarcHeader(gowarc.ContentType, gowarc.ApplicationWarcFields)
	rec, err := build(b)
	if err != nil {
		return nil, err
	}
	return compress(rec, 512)
}
