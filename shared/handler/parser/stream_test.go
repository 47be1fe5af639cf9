package parser_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/records"
	"github.com/crawlstack/crawlstack/shared/handler/parser"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

const streamQ = "stream"

// streamed receives every message of the stream queue.
func (e *env) streamed() []parser.StreamMessage {
	e.t.Helper()
	var out []parser.StreamMessage
	for {
		msgs, err := e.q.Receive(context.Background(), streamQ, queue.MaxBatch, time.Minute, 0)
		if err != nil {
			e.t.Fatal(err)
		}
		if len(msgs) == 0 {
			return out
		}
		for _, m := range msgs {
			var s parser.StreamMessage
			if err := json.Unmarshal([]byte(m.Body), &s); err != nil {
				e.t.Fatalf("stream message %q: %v", m.Body, err)
			}
			out = append(out, s)
		}
	}
}

func streamEnv(t *testing.T) *env {
	e := newEnv(t)
	if _, err := e.q.CreateQueue(context.Background(), streamQ, queue.Config{}); err != nil {
		t.Fatal(err)
	}
	e.cfg.StreamQueue = streamQ
	e.with(func(*parser.Deps) {})
	return e
}

// TestRecordsAreStreamedAsTheyAreStored: with a stream queue, each page of a batch is sent to it
// with its record, the same as the records file's line (read back from the file), and the name
// of that file; a record too large for a message is sent as a reference to its file.
func TestRecordsAreStreamedAsTheyAreStored(t *testing.T) {
	e := streamEnv(t)
	recs := e.batchOfOneFile(30, 0)
	if got := e.handle(recs...); len(got) != 0 {
		t.Fatalf("BatchItemFailures = %v, want none", got)
	}
	var m message.Parse
	if err := json.Unmarshal([]byte(recs[0].Body), &m); err != nil {
		t.Fatal(err)
	}
	stored := e.records(m.Crawl)
	keys, err := e.blobs.List(context.Background(), records.Dir(m.Crawl))
	if err != nil || len(keys) != 1 {
		t.Fatalf("records files %v (%v), want one", keys, err)
	}
	got := e.streamed()
	if len(got) != len(stored) || len(stored) != 30 {
		t.Fatalf("%d records streamed and %d stored; want the batch's 30 each", len(got), len(stored))
	}
	byURL := map[string]records.Record{}
	for _, r := range stored {
		byURL[r.URL] = r
	}
	for _, s := range got {
		want, ok := byURL[s.Record.URL]
		if !ok || s.Crawl != m.Crawl || s.RecordsFile != keys[0] || s.Truncated || !reflect.DeepEqual(*s.Record, want) {
			t.Fatalf("streamed %+v; want the record of the file %s, as stored: %+v", s, keys[0], want)
		}
	}
}

// TestAFailedStreamSendRetriesTheBatchAndStoresOneFile: a stream send that fails fails the batch
// before its records are stored; the redelivery streams them and stores one records file.
func TestAFailedStreamSendRetriesTheBatchAndStoresOneFile(t *testing.T) {
	e := streamEnv(t)
	rec, m := e.sample()
	rec = e.store(rec, m, warc(t, m.FinalURL, nil, "<title>Home</title>"+links), 0)
	e.with(func(d *parser.Deps) { d.Send = &streamFails{Sender: e.send} })
	if got := e.handle(rec); !slices.Equal(got, []string{rec.MessageId}) {
		t.Fatalf("with the stream failing: BatchItemFailures = %v, want [%s]", got, rec.MessageId)
	}
	if n := len(e.records(m.Crawl)); n != 0 {
		t.Fatalf("%d records stored with the stream failing, want none", n)
	}
	e.with(func(d *parser.Deps) { d.Send = e.send })
	if got := e.handle(rec); len(got) != 0 {
		t.Fatalf("redelivery: BatchItemFailures = %v", got)
	}
	if n, s := len(e.records(m.Crawl)), e.streamed(); n != 1 || len(s) != 1 || s[0].Record.URL != m.URL {
		t.Errorf("after the redelivery: %d records stored, streamed %+v; want the page once in each", n, s)
	}
}

// TestARecordTooLargeForAMessageIsStreamedAsAReference: a record larger than a message may be
// (a page of 1,000 links of 300 bytes) is streamed as its URL, fetch time and records file.
func TestARecordTooLargeForAMessageIsStreamedAsAReference(t *testing.T) {
	e := streamEnv(t)
	rec, m := e.sample()
	var page strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&page, `<a href="/%d/%s">x</a>`, i, strings.Repeat("p", 300))
	}
	rec = e.store(rec, m, warc(t, m.FinalURL, nil, page.String()), 0)
	if got := e.handle(rec); len(got) != 0 {
		t.Fatalf("BatchItemFailures = %v", got)
	}
	s := e.streamed()
	var stored []records.Record // records.Read: the test's own reader stops at lines of 64 KiB
	if _, err := records.Read(context.Background(), e.blobs, m.Crawl, nil, func(r records.Record) error {
		stored = append(stored, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(s) != 1 || len(stored) != 1 || !s[0].Truncated || s[0].Record != nil || s[0].URL != stored[0].URL ||
		s[0].FetchedAt != stored[0].FetchedAt.UTC().Format(time.RFC3339Nano) || !strings.HasPrefix(s[0].RecordsFile, records.Dir(m.Crawl)) {
		t.Errorf("streamed %+v; want a reference to the stored record of %s (%d stored)", s, m.URL, len(stored))
	}
}

// streamFails fails every send to the stream queue.
type streamFails struct{ queue.Sender }

func (s *streamFails) SendBatch(ctx context.Context, name string, entries []queue.Entry) error {
	if name == streamQ {
		return context.DeadlineExceeded
	}
	return s.Sender.SendBatch(ctx, name, entries)
}
