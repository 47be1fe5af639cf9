package parser

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/records"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// Results as they come: with Config.StreamQueue set, each page's record is also sent to that
// queue (a queue the user names, on the stack: docs/results.md), as a batch's records are stored.
// The stream is at least once: a batch delivered again sends its records again, so a consumer
// drops repeats by the record's crawl, url and fetchedAt. The records files stay the complete
// copy.

// StreamMessage is one message of the record stream.
type StreamMessage struct {
	// Crawl is the record's crawl, and RecordsFile the key of the records file that holds it.
	Crawl       string `json:"crawl"`
	RecordsFile string `json:"recordsFile"`
	// Record is the page's record; nil when it is larger than a message may be (Truncated), when
	// URL and FetchedAt name it, and RecordsFile holds it whole.
	Record    *records.Record `json:"record,omitempty"`
	Truncated bool            `json:"truncated,omitempty"`
	URL       string          `json:"url,omitempty"`
	FetchedAt string          `json:"fetchedAt,omitempty"`
}

// streamRecords sends the records of pages, stored in the records file key, to the stream queue.
func (h *Handler) streamRecords(ctx context.Context, crawl, key string, pages []parsed) error {
	if h.cfg.StreamQueue == "" || len(pages) == 0 {
		return nil
	}
	entries := make([]queue.Entry, 0, len(pages))
	for i := range pages {
		m := StreamMessage{Crawl: crawl, RecordsFile: key, Record: &pages[i].out}
		body, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("stream record of %s: %w", pages[i].out.URL, err)
		}
		if len(body) > queue.MaxBatchBytes {
			m = StreamMessage{Crawl: crawl, RecordsFile: key, Truncated: true, URL: pages[i].out.URL,
				FetchedAt: pages[i].out.FetchedAt.UTC().Format(time.RFC3339Nano)}
			if body, err = json.Marshal(m); err != nil {
				return err
			}
		}
		entries = append(entries, queue.Entry{ID: strconv.Itoa(i), Body: string(body)})
	}
	if err := h.send.SendBatch(ctx, h.cfg.StreamQueue, entries); err != nil {
		return fmt.Errorf("send records to the stream: %w", err)
	}
	return nil
}
