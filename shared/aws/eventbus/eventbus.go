// Package eventbus is the EventBridge adapter of finish.Publisher and of schedule's refusals: it
// puts a crawl's "Crawl Finished" (or "Crawl Stalled") event, and a refused seed file's "Seed File
// Refused" event, on an event bus (the account's default bus in the stack) with PutEvents.
package eventbus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/crawlstack/crawlstack/shared/crawl/finish"
	"github.com/crawlstack/crawlstack/shared/crawl/refusal"
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

// Publish puts e with source finish.Source and its detail-type (e.DetailTypeOf).
func (b *Bus) Publish(ctx context.Context, e finish.Event) error {
	return b.put(ctx, "the end of crawl "+e.Crawl, e.DetailTypeOf(), e, e.FinishedAt)
}

// PublishRefusal puts e, the refusal of a seed file, with source refusal.Source and detail-type
// refusal.DetailType.
func (b *Bus) PublishRefusal(ctx context.Context, e refusal.Event) error {
	return b.put(ctx, "the refusal of "+e.SeedFile+" (crawl "+e.Crawl+")", refusal.DetailType, e, e.RefusedAt)
}

// put puts one entry of the crawler's source with detail as its JSON. PutEvents answers 200 even
// when it refuses an entry, so the entry's own error code is checked too.
func (b *Bus) put(ctx context.Context, what, detailType string, detail any, at time.Time) error {
	body, err := json.Marshal(detail)
	if err != nil {
		return fmt.Errorf("encode %s: %w", what, err)
	}
	out, err := b.api.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []types.PutEventsRequestEntry{{
		EventBusName: aws.String(b.name),
		Source:       aws.String(finish.Source),
		DetailType:   aws.String(detailType),
		Detail:       aws.String(string(body)),
		Time:         aws.Time(at),
	}}})
	if err != nil {
		return fmt.Errorf("put %s on event bus %s: %w", what, b.name, err)
	}
	if out.FailedEntryCount > 0 || len(out.Entries) != 1 {
		var cause error = errors.New("no entry in the answer")
		if len(out.Entries) > 0 {
			en := out.Entries[0]
			cause = fmt.Errorf("%s: %s", aws.ToString(en.ErrorCode), aws.ToString(en.ErrorMessage))
		}
		return fmt.Errorf("put %s on event bus %s: refused: %w", what, b.name, cause)
	}
	return nil
}
