package parser

import (
	"context"
	"math"
	"sync"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/crawl/message"
)

// maxSpanBytes bounds one shared read: a batch's pages from one WARC file are read together only
// while the span that covers them is at most this long.
const maxSpanBytes = 16 << 20

// spanReader reads the stored responses of one batch. fetch stores a batch's pages back to back in
// one WARC file, so the pages of one file are read with a single ranged GET of the span that covers
// them, rather than one GET (on S3, one billed request) per page.
type spanReader struct {
	blobs Blobs
	spans map[string]*span // by WARC key; only keys with two or more pages in the batch
	// decoded holds the batch's parse messages that decode, by body, so each is decoded once.
	decoded map[string]*message.Parse
}

// span is the covering range of one WARC file, read once by the first page that needs it.
type span struct {
	once           sync.Once
	offset, length int64
	data           []byte
	err            error
}

// newSpanReader plans the shared reads of ev's parse messages. Messages that do not decode are
// left to parseOne, which reports them.
func newSpanReader(blobs Blobs, ev events.SQSEvent) *spanReader {
	type bounds struct {
		lo, hi, sum int64
		n           int
	}
	byKey := map[string]*bounds{}
	r := &spanReader{blobs: blobs, spans: map[string]*span{}, decoded: make(map[string]*message.Parse, len(ev.Records))}
	for _, rec := range ev.Records {
		m, err := message.DecodeParse(rec.Body)
		if err != nil {
			continue
		}
		r.decoded[rec.Body] = m
		file, pages := m.PageList()
		for _, pg := range pages {
			if pg.Unchanged != nil {
				continue // not read from the file: a revisit has no payload (recrawl.go)
			}
			ref := pg.Ref(file)
			if ref.Length > maxSpanBytes || ref.Offset > math.MaxInt64-ref.Length {
				continue // read alone; its own GET reports what is wrong with it
			}
			b, ok := byKey[ref.Key]
			if !ok {
				b = &bounds{lo: ref.Offset, hi: ref.Offset + ref.Length}
				byKey[ref.Key] = b
			}
			b.lo, b.hi = min(b.lo, ref.Offset), max(b.hi, ref.Offset+ref.Length)
			b.sum += ref.Length
			b.n++
		}
	}
	for key, b := range byKey {
		// One page gains nothing; a sparse span (other batches' pages between ours) costs more
		// bytes than the requests it saves.
		if b.n < 2 || b.hi-b.lo > maxSpanBytes || b.hi-b.lo > 2*b.sum {
			continue
		}
		r.spans[key] = &span{offset: b.lo, length: b.hi - b.lo}
	}
	return r
}

// decode returns the parse message of rec, decoded when the batch was planned; one that did not
// decode is decoded again for its error.
func (r *spanReader) decode(rec events.SQSMessage) (*message.Parse, error) {
	if m, ok := r.decoded[rec.Body]; ok {
		return m, nil
	}
	return message.DecodeParse(rec.Body)
}

// read returns the bytes of ref: a slice of its file's span when the batch shares one, or its own
// ranged GET (also when the shared read failed, so one bad read fails only its own page).
func (r *spanReader) read(ctx context.Context, ref message.Ref) ([]byte, error) {
	if s, ok := r.spans[ref.Key]; ok {
		s.once.Do(func() { s.data, s.err = r.blobs.GetRange(ctx, ref.Key, s.offset, s.length) })
		start, end := ref.Offset-s.offset, ref.Offset-s.offset+ref.Length
		if s.err == nil && start >= 0 && end <= int64(len(s.data)) {
			return s.data[start:end:end], nil
		}
	}
	return r.blobs.GetRange(ctx, ref.Key, ref.Offset, ref.Length)
}
