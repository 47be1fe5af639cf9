package e2etest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/records"
	"github.com/crawlstack/crawlstack/shared/handler/parser"
	"github.com/crawlstack/crawlstack/shared/port/blob"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// failFirstRecords fails the first put of a records file, after parse has sent its records to the
// stream: the batch comes again, and streams its records a second time.
type failFirstRecords struct {
	blob.Store
	mu     sync.Mutex
	failed bool
	lines  int // the records in the file that failed
}

func (f *failFirstRecords) Put(ctx context.Context, key string, body []byte, contentType string) error {
	f.mu.Lock()
	fail := !f.failed && strings.HasPrefix(key, records.Prefix)
	f.failed = f.failed || fail
	if fail {
		f.lines = bytes.Count(body, []byte("\n"))
	}
	f.mu.Unlock()
	if fail {
		return errors.New("injected: the records file's put failed")
	}
	return f.Store.Put(ctx, key, body, contentType)
}

// CheckRecordsAreStreamed crawls the site with a record stream queue, the first records file's
// put failing after its batch was streamed. Every page's record comes through the stream as the
// records files hold it (read back apart), at least once: the failed batch's records twice, and
// the others once.
func (h *Harness) CheckRecordsAreStreamed(concurrency int) {
	t := h.T
	t.Helper()
	ctx := context.Background()
	admin, ok := h.Queue.(queue.Admin)
	if !ok {
		t.Fatalf("the backend's queue %T cannot create the stream queue", h.Queue)
	}
	var tag [4]byte
	_, _ = rand.Read(tag[:])
	stream, err := admin.CreateQueue(ctx, "stream-"+hex.EncodeToString(tag[:]), queue.Config{Visibility: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	cfg := h.Config()
	cfg.RecordStreamQueue = stream
	ports := h.Ports()
	puts := &failFirstRecords{Store: h.Blobs}
	ports.Blobs = puts
	crawl, err := h.Crawl(ctx, cfg, ports, h.Queue, concurrency)
	if err != nil {
		t.Fatal(err)
	}
	if !puts.failed {
		t.Fatal("no records file was put: the fault was not injected")
	}
	stored := h.RecordsOf(crawl)
	if len(stored) != h.Site.Pages {
		t.Fatalf("%d records stored, want the site's %d pages", len(stored), h.Site.Pages)
	}
	// Every record once, the failed batch's twice: receive until that many came, or the deadline,
	// and then until a receive finds none, for any that came more often. One empty receive before
	// that proves nothing: SQS's short poll samples some of its servers and may answer none while
	// the queue holds messages (a fresh-clone CI stopped at one, with 30 of the 40 records seen).
	seen := map[string]int{}
	expect, got := len(stored)+puts.lines, 0
	for deadline, extra := time.Now().Add(30*time.Second), false; ; {
		msgs, err := h.Queue.Receive(ctx, stream, queue.MaxBatch, time.Minute, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		got += len(msgs)
		if extra && len(msgs) == 0 {
			break
		}
		if !extra && (got >= expect || time.Now().After(deadline)) {
			extra = true
		}
		for _, m := range msgs {
			var s parser.StreamMessage
			if err := json.Unmarshal([]byte(m.Body), &s); err != nil || s.Record == nil {
				t.Fatalf("stream message %q: %v", m.Body, err)
			}
			want, ok := stored[s.Record.URL]
			if !ok || s.Crawl != crawl || !reflect.DeepEqual(*s.Record, want) {
				t.Errorf("streamed %+v; want crawl %s's record as stored: %+v", *s.Record, crawl, want)
			}
			seen[s.Record.URL+"|"+s.Record.FetchedAt.String()]++
		}
	}
	twice := 0
	for _, n := range seen {
		if n > 1 {
			twice++
		}
	}
	if len(seen) != len(stored) || twice != puts.lines {
		t.Errorf("%d records streamed (by url and fetch time), %d of them twice; want all %d, and the failed batch's %d twice", len(seen), twice, len(stored), puts.lines)
	}
}
