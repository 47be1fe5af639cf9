package sqsbatch

import (
	"strconv"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// Event builds the events.SQSEvent Lambda would deliver for msgs received from the named queue:
// what `crawl run`'s event source mappings hand their handlers, and what a handler that receives
// from its own queue works on (the fetcher's top-up).
func Event(queueName string, msgs []queue.Message) events.SQSEvent {
	ev := events.SQSEvent{Records: make([]events.SQSMessage, len(msgs))}
	for i, m := range msgs {
		ev.Records[i] = events.SQSMessage{
			MessageId:     m.ID,
			ReceiptHandle: m.ReceiptHandle,
			Body:          m.Body,
			Attributes: map[string]string{
				"ApproximateReceiveCount": strconv.Itoa(m.ReceiveCount),
				"SentTimestamp":           strconv.FormatInt(m.SentAt.UnixMilli(), 10),
			},
			EventSource:    "aws:sqs",
			EventSourceARN: "arn:aws:sqs:local:000000000000:" + queueName,
			AWSRegion:      "local",
		}
		if len(m.Attributes) > 0 {
			attrs := make(map[string]events.SQSMessageAttribute, len(m.Attributes))
			for k, v := range m.Attributes {
				attrs[k] = events.SQSMessageAttribute{DataType: "String", StringValue: &v}
			}
			ev.Records[i].MessageAttributes = attrs
		}
	}
	return ev
}
