package crawlstack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
)

// Queue settings shared by the three pipeline queues.
const (
	// queueRetentionDays is how long an unconsumed message waits in a source queue.
	queueRetentionDays = 4
	// dlqRetentionDays must exceed queueRetentionDays: a message's age counts
	// from its first send, so a DLQ with a shorter retention drops it early.
	dlqRetentionDays = 14
	// maxMessageBytes is the SQS maximum (256 KiB), set explicitly so the
	// handlers' message size bounds have a known ceiling.
	maxMessageBytes = 256 * 1024
	// visibilityFactor times the consumer's timeout, plus its batching window,
	// is the visibility timeout, so retries of a throttled or slow batch do
	// not redeliver early (FunctionConfig.VisibilityTimeoutSeconds).
	visibilityFactor = 6
)

// pipelineQueue is a source queue and its dead-letter queue.
type pipelineQueue struct {
	Queue awssqs.Queue
	DLQ   awssqs.Queue
}

// newPipelineQueue makes the queue consumed by the named function and its DLQ.
func newPipelineQueue(stack awscdk.Stack, name string, cfg Config) pipelineQueue {
	id := title(name)
	dlq := awssqs.NewQueue(stack, jsii.String(id+"DLQ"), &awssqs.QueueProps{
		RetentionPeriod:     awscdk.Duration_Days(jsii.Number(dlqRetentionDays)),
		Encryption:          awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:          jsii.Bool(true),
		MaxMessageSizeBytes: jsii.Number(maxMessageBytes),
	})
	q := awssqs.NewQueue(stack, jsii.String(id+"Queue"), &awssqs.QueueProps{
		RetentionPeriod:     awscdk.Duration_Days(jsii.Number(queueRetentionDays)),
		VisibilityTimeout:   awscdk.Duration_Seconds(jsii.Number(float64(cfg.Function(name).VisibilityTimeoutSeconds()))),
		Encryption:          awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:          jsii.Bool(true),
		MaxMessageSizeBytes: jsii.Number(maxMessageBytes),
		DeadLetterQueue: &awssqs.DeadLetterQueue{
			Queue:           dlq,
			MaxReceiveCount: jsii.Number(float64(cfg.MaxReceiveCount)),
		},
	})
	return pipelineQueue{Queue: q, DLQ: dlq}
}

// title upper-cases the first letter of a function name for construct ids.
func title(name string) string {
	if name == "" {
		return name
	}
	return string(name[0]-'a'+'A') + name[1:]
}
