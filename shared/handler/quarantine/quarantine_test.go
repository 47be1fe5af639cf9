package quarantine

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
)

type putFunc func(ctx context.Context, key string, body []byte, contentType string) error

func (f putFunc) Put(ctx context.Context, key string, body []byte, ct string) error {
	return f(ctx, key, body, ct)
}

func TestQuarantine(t *testing.T) {
	var gotKey string
	var got Entry
	s := &Store{Source: "fetch", Now: func() time.Time { return time.Date(2026, 11, 29, 1, 2, 3, 0, time.UTC) },
		Blobs: putFunc(func(_ context.Context, key string, body []byte, _ string) error {
			gotKey = key
			return json.Unmarshal(body, &got)
		})}
	rec := events.SQSMessage{MessageId: "ab/../c d", Body: "{not json"}
	if err := s.Quarantine(context.Background(), rec, errclass.Errorf(errclass.Poison, "not a JSON message")); err != nil {
		t.Fatal(err)
	}
	if want := "quarantine/fetch/2026-11-29/ab____c_d.json"; gotKey != want {
		t.Errorf("key = %q, want %q", gotKey, want)
	}
	if got.Body != rec.Body || got.Class != errclass.Poison || got.Reason != "poison: not a JSON message" {
		t.Errorf("entry = %+v", got)
	}
}
