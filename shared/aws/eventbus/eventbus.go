// Package eventbus is the EventBridge adapter of finish.Publisher: it puts a crawl's "Crawl
// Finished" (or "Crawl Stalled") event on an event bus (the account's default bus in the stack)
// with PutEvents.
package eventbus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/crawlstack/crawlstack/shared/crawl/finish"
)

// DefaultBus is the account's default event bus, where AWS services put their events and rules
// match them.
const DefaultBus = "default"

// API is the one EventBridge call the bus makes (*eventbridge.Client).
type API interface {
	PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, optFns ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
}

var _ API = (*eventbridge.Client)(nil)

// Bus puts events on one event bus.
type Bus struct {
	api  API
	name string
}

var _ finish.Publisher = (*Bus)(nil)

// New returns the bus called name (DefaultBus when empty) reached through api.
func New(api API, name string) *Bus {
	if name == "" {
		name = DefaultBus
	}
	return &Bus{api: api, name: name}
}

// Publish puts e with source finish.Source and its detail-type (e.DetailTypeOf). PutEvents answers
// 200 even when it refuses an entry, so the entry's own error code is checked too.
func (b *Bus) Publish(ctx context.Context, e finish.Event) error {
	detail, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode the end of crawl %s: %w", e.Crawl, err)
	}
	out, err := b.api.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []types.PutEventsRequestEntry{{
		EventBusName: aws.String(b.name),
		Source:       aws.String(finish.Source),
		DetailType:   aws.String(e.DetailTypeOf()),
		Detail:       aws.String(string(detail)),
		Time:         aws.Time(e.FinishedAt),
	}}})
	if err != nil {
		return fmt.Errorf("put the end of crawl %s on event bus %s: %w", e.Crawl, b.name, err)
	}
	if out.FailedEntryCount > 0 || len(out.Entries) != 1 {
		var cause error = errors.New("no entry in the answer")
		if len(out.Entries) > 0 {
			en := out.Entries[0]
			cause = fmt.Errorf("%s: %s", aws.ToString(en.ErrorCode), aws.ToString(en.ErrorMessage))
		}
		return fmt.Errorf("put the end of crawl %s on event bus %s: refused: %w", e.Crawl, b.name, cause)
	}
	return nil
}
