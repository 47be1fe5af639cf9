package warcfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/nlnwa/gowarc/v3"
)

// RecordInfo is what Filter says of one record of a file.
type RecordInfo struct {
	Type      string // the WARC-Type: warcinfo, response, request ...
	ID        string // the WARC-Record-ID
	TargetURI string // the WARC-Target-URI ("" on a warcinfo record)
	// ConcurrentTo are the records this one names in WARC-Concurrent-To (a request names its
	// response).
	ConcurrentTo []string
	Span         Span // where the record is: in the file given for a dropped record, in the new file for a kept one
}

// Filter returns the file data without the records drop selects and the records that name a
// dropped one in WARC-Concurrent-To (the request record of a dropped response). It reads the
// file with gowarc's reader; the records kept are kept byte for byte (each its own gzip member,
// digests unchanged), in their order, so every kept record reads back as it was. kept and dropped
// say which records went where, with their spans in the new file and in data.
func Filter(data []byte, drop func(RecordInfo) bool) (out []byte, kept, dropped []RecordInfo, err error) {
	r, err := gowarc.NewWarcFileReaderFromStream(bytes.NewReader(data), 0, gowarc.WithSpecViolationPolicy(gowarc.ErrIgnore),
		gowarc.WithSyntaxErrorPolicy(gowarc.ErrIgnore))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("read: %w", err)
	}
	defer r.Close()
	gone := map[string]bool{}
	var parts [][]byte
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, nil, fmt.Errorf("read at %d: %w", rec.Offset, err)
		}
		info := infoOf(rec)
		rec.Close()
		if rec.Offset < 0 || rec.Size <= 0 || rec.Offset+rec.Size > int64(len(data)) {
			return nil, nil, nil, fmt.Errorf("record at %d: span %d+%d outside the file's %d bytes", rec.Offset, rec.Offset, rec.Size, len(data))
		}
		drops := drop(info)
		for _, id := range info.ConcurrentTo {
			drops = drops || gone[id]
		}
		if drops {
			gone[info.ID] = true
			dropped = append(dropped, info)
			continue
		}
		parts = append(parts, data[info.Span.Offset:info.Span.Offset+info.Span.Length])
		kept = append(kept, info)
	}
	out, spans := Join(parts)
	for i := range kept {
		kept[i].Span = spans[i]
	}
	return out, kept, dropped, nil
}

func infoOf(rec gowarc.Record) RecordInfo {
	info := RecordInfo{Span: Span{Offset: rec.Offset, Length: rec.Size}}
	if w := rec.WarcRecord; w != nil {
		h := w.WarcHeader()
		info.Type, info.ID, info.TargetURI = w.Type().String(), h.Get(gowarc.WarcRecordID), h.Get(gowarc.WarcTargetURI)
		info.ConcurrentTo = h.GetAll(gowarc.WarcConcurrentTo)
	}
	return info
}
