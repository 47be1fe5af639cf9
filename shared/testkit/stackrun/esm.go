package stackrun

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/local/localrun"
)

// Invoker sends one invocation's payload to a function and returns its response; a function
// error is an error.
type Invoker interface {
	Invoke(ctx context.Context, payload []byte) ([]byte, error)
}

// Source is the event source mapping of f as a source of the local runner (shared/local/localrun, which
// receives, gathers batches and deletes as the mapping does): the template's batch size, batching
// window and queue visibility, pollers processes at once, and inv invoking the function with the
// SQS event Lambda would build, its records carrying the queue's ARN and region.
//
// With ReportBatchItemFailures, the records the response names stay in the queue and the rest are
// deleted; without it, the response is not read and a function error alone fails the batch.
func (f *Function) Source(inv Invoker, pollers int, region string) (localrun.Source, error) {
	m := f.Mapping
	if m == nil {
		return localrun.Source{}, fmt.Errorf("function %s has no event source mapping", f.Name)
	}
	handler := func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		for i := range ev.Records {
			ev.Records[i].EventSourceARN, ev.Records[i].AWSRegion = m.QueueARN, region
		}
		payload, err := json.Marshal(ev)
		if err != nil {
			return events.SQSEventResponse{}, fmt.Errorf("encode the %s event: %w", f.Name, err)
		}
		out, err := inv.Invoke(ctx, payload)
		if err != nil {
			return events.SQSEventResponse{}, err
		}
		var resp events.SQSEventResponse
		if !m.ReportFailures {
			return resp, nil
		}
		if err := json.Unmarshal(out, &resp); err != nil {
			return events.SQSEventResponse{}, fmt.Errorf("%s answered what is not an SQSEventResponse: %w: %.200s", f.Name, err, out)
		}
		return resp, nil
	}
	return localrun.Source{Name: f.Name, Queue: m.QueueURL, Handler: handler, Pollers: pollers,
		BatchSize: m.BatchSize, Window: m.Window, Visibility: m.Visibility}, nil
}
