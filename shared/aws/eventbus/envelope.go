package eventbus

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/layout"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/crawl/finish"
)

// Envelope is the event as EventBridge delivers it to a rule's target (and as `crawl run` writes
// it): the detail under EventBridge's own fields. id is EventBridge's id of one put.
func Envelope(e finish.Event, id, account, region string) (events.EventBridgeEvent, error) {
	detail, err := json.Marshal(e)
	if err != nil {
		return events.EventBridgeEvent{}, fmt.Errorf("encode the end of crawl %s: %w", e.Crawl, err)
	}
	return events.EventBridgeEvent{Version: "0", ID: id, DetailType: e.DetailTypeOf(), Source: finish.Source, AccountID: account,
		Time: e.FinishedAt.UTC().Truncate(time.Second), Region: region, Resources: []string{}, Detail: detail}, nil
}

// BlobPublisher writes a crawl's end event, in EventBridge's envelope, beside its seed report:
// crawls/<crawl>/finished.json. It is `crawl run`'s Publisher: the same envelope as a rule's target gets on AWS.
type BlobPublisher struct {
	Blobs interface {
		Put(ctx context.Context, key string, body []byte, contentType string) error
	}
}

// Publish writes e.
func (p BlobPublisher) Publish(ctx context.Context, e finish.Event) error {
	env, err := Envelope(e, e.EventID, "local", "local")
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(env, "", "  ")
	if err != nil {
		return fmt.Errorf("encode the end of crawl %s: %w", e.Crawl, err)
	}
	if err := p.Blobs.Put(ctx, layout.Finished(e.Crawl), append(b, '\n'), "application/json"); err != nil {
		return fmt.Errorf("write %s: %w", layout.Finished(e.Crawl), err)
	}
	return nil
}
