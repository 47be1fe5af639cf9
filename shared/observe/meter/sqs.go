package meter

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// sqsRequests returns the SQS requests one answered call is billed as: per started 64 KiB of
// the payload sent (SendMessage, SendMessageBatch) or received (ReceiveMessage), and one for
// every other call.
func sqsRequests(op string, input, result any) int64 {
	payload := 0
	switch op {
	case "SendMessage":
		if in, ok := input.(*sqs.SendMessageInput); ok {
			payload = len(deref(in.MessageBody)) + attributesSize(in.MessageAttributes) +
				systemAttributesSize(in.MessageSystemAttributes)
		}
	case "SendMessageBatch":
		if in, ok := input.(*sqs.SendMessageBatchInput); ok {
			for _, e := range in.Entries {
				payload += len(deref(e.MessageBody)) + attributesSize(e.MessageAttributes) +
					systemAttributesSize(e.MessageSystemAttributes)
			}
		}
	case "ReceiveMessage":
		if out, ok := result.(*sqs.ReceiveMessageOutput); ok && out != nil {
			for _, msg := range out.Messages {
				payload += len(deref(msg.Body)) + attributesSize(msg.MessageAttributes)
			}
		}
	}
	return sqsChunks(payload)
}

// attributesSize returns the size of message attributes as SQS counts it toward a message's
// size: each attribute's name, data type and value.
func attributesSize(attrs map[string]types.MessageAttributeValue) int {
	n := 0
	for name, v := range attrs {
		n += len(name) + attributeValueSize(v.DataType, v.StringValue, v.BinaryValue, v.StringListValues, v.BinaryListValues)
	}
	return n
}

// systemAttributesSize returns the size of message system attributes (such as AWSTraceHeader),
// counted as message attributes are.
func systemAttributesSize(attrs map[string]types.MessageSystemAttributeValue) int {
	n := 0
	for name, v := range attrs {
		n += len(name) + attributeValueSize(v.DataType, v.StringValue, v.BinaryValue, v.StringListValues, v.BinaryListValues)
	}
	return n
}

// attributeValueSize returns the size of one attribute's type and value.
func attributeValueSize(dataType, s *string, b []byte, ss []string, bs [][]byte) int {
	n := len(deref(dataType)) + len(deref(s)) + len(b)
	for _, v := range ss {
		n += len(v)
	}
	for _, v := range bs {
		n += len(v)
	}
	return n
}

// deref returns *s, or "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// queueOf is the last part of the name of the queue an SQS call is about ("fetch" of
// ".../crawlstack-fetch"), or "" for a call the crawler makes on no queue.
func queueOf(input any) string {
	var u *string
	switch in := input.(type) {
	case *sqs.SendMessageInput:
		u = in.QueueUrl
	case *sqs.SendMessageBatchInput:
		u = in.QueueUrl
	case *sqs.ReceiveMessageInput:
		u = in.QueueUrl
	case *sqs.DeleteMessageInput:
		u = in.QueueUrl
	case *sqs.DeleteMessageBatchInput:
		u = in.QueueUrl
	case *sqs.ChangeMessageVisibilityInput:
		u = in.QueueUrl
	case *sqs.ChangeMessageVisibilityBatchInput:
		u = in.QueueUrl
	case *sqs.GetQueueAttributesInput:
		u = in.QueueUrl
	}
	name := deref(u)
	return name[strings.LastIndexAny(name, "/-")+1:]
}
