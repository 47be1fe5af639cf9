package warcfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/nlnwa/gowarc/v3"
)

// IndexFile reads a stored WARC file, named filename, and returns its CDXJ index: the lines
// Assemble's File.Index holds for it, sorted. A crawl's index is built so, from its files, when
// the files were stored without one beside each (a PUT fewer per file).
func IndexFile(filename string, data []byte) ([]byte, error) {
	r, err := gowarc.NewWarcFileReaderFromStream(bytes.NewReader(data), 0, gowarc.WithSpecViolationPolicy(gowarc.ErrIgnore),
		gowarc.WithSyntaxErrorPolicy(gowarc.ErrIgnore))
	if err != nil {
		return nil, fmt.Errorf("index %s: %w", filename, err)
	}
	defer r.Close()
	var entries []entry
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("index %s at %d: %w", filename, rec.Offset, err)
		}
		e, ok, err := entryOf(rec)
		rec.Close()
		if err != nil {
			return nil, fmt.Errorf("index %s at %d: %w", filename, rec.Offset, err)
		}
		if ok {
			entries = append(entries, e)
		}
	}
	return index(filename, entries), nil
}

// entryOf is what the index says of a response or revisit record; ok is false for any other record.
func entryOf(rec gowarc.Record) (e entry, ok bool, err error) {
	w := rec.WarcRecord
	if w != nil && w.Type() == gowarc.Revisit {
		return revisitEntry(rec)
	}
	if w == nil || w.Type() != gowarc.Response {
		return entry{}, false, nil
	}
	blk, isHTTP := w.Block().(gowarc.HttpResponseBlock)
	if !isHTTP {
		return entry{}, false, nil
	}
	at, err := time.Parse(time.RFC3339Nano, w.WarcHeader().Get(gowarc.WarcDate))
	if err != nil {
		return entry{}, false, fmt.Errorf("WARC-Date: %w", err)
	}
	e = entry{url: w.WarcHeader().Get(gowarc.WarcTargetURI), at: at, status: blk.HttpStatusCode(),
		digest: w.WarcHeader().Get(gowarc.WarcPayloadDigest), span: Span{Offset: rec.Offset, Length: rec.Size}}
	if h := blk.HttpHeader(); h != nil {
		e.mime = h.Get("Content-Type")
	}
	return e, true, nil
}

// MergeIndexes returns the lines of several CDXJ indexes as one, sorted.
func MergeIndexes(indexes ...[]byte) []byte {
	var lines [][]byte
	for _, ix := range indexes {
		for line := range bytes.Lines(ix) {
			lines = append(lines, line)
		}
	}
	slices.SortFunc(lines, bytes.Compare)
	return bytes.Join(lines, nil)
}
