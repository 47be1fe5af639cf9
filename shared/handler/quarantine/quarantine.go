// Package quarantine keeps poison messages in the blob store under quarantine/<source>/, one JSON
// document per message with its reason, so a person can inspect them and nothing else is blocked.
package quarantine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/layout"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
)

// Prefix is where quarantined messages live in the blob store.
const Prefix = layout.Quarantine

// Putter is the blob store method the quarantine needs.
type Putter interface {
	Put(ctx context.Context, key string, body []byte, contentType string) error
}

// Store quarantines the poison records of one source (a handler name).
type Store struct {
	Blobs  Putter
	Source string
	Now    func() time.Time
}

// Entry is one quarantined message.
type Entry struct {
	Source       string            `json:"source"`
	MessageID    string            `json:"messageId"`
	Reason       string            `json:"reason"`
	Class        errclass.Class    `json:"class"`
	Body         string            `json:"body"`
	Attributes   map[string]string `json:"attributes,omitempty"`
	QuarantineAt time.Time         `json:"quarantinedAt"`
}

// Quarantine writes the record and its reason to quarantine/<source>/<date>/<messageId>.json.
func (s *Store) Quarantine(ctx context.Context, rec events.SQSMessage, reason error) error {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	at := now().UTC()
	e := Entry{Source: s.Source, MessageID: rec.MessageId, Reason: reason.Error(), Class: errclass.Of(reason),
		Body: rec.Body, Attributes: rec.Attributes, QuarantineAt: at}
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return fmt.Errorf("quarantine %s: %w", rec.MessageId, err)
	}
	key := fmt.Sprintf("%s%s/%s/%s.json", Prefix, s.Source, at.Format("2006-01-02"), safe(rec.MessageId))
	if err := s.Blobs.Put(ctx, key, b, "application/json"); err != nil {
		return fmt.Errorf("quarantine %s: %w", rec.MessageId, err)
	}
	return nil
}

// safe keeps a message id usable as one key segment.
func safe(id string) string {
	b := []byte(id)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "unknown"
	}
	return string(b)
}
