package crawlstack

import (
	"regexp"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
)

// Results as they come: recordStreamQueueArn names an SQS queue of the user's that the parse
// function sends each page's record to as it stores it (shared/handler/parser/stream.go, at least
// once). The parse function alone may send to it, and only sqs:SendMessage; unset (the default),
// there is no stream, no grant and no variable. A queue encrypted with a customer managed key
// needs kms:GenerateDataKey and kms:Decrypt for the parse role in the key's own policy.

// envRecordStream is the variable that gives parse the stream queue's URL.
const envRecordStream = "CRAWL_RECORD_STREAM_QUEUE_URL"

// sqsArn is a standard queue's ARN: FIFO queues are refused, since the records are sent with no
// message group.
var sqsArn = regexp.MustCompile(`^arn:aws[a-z-]*:sqs:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,80}$`)

// checkRecordStream checks recordStreamQueueArn.
func checkRecordStream(c Config, bad func(key, format string, args ...any)) {
	switch v := c.RecordStreamQueueArn; {
	case v == "":
	case strings.HasSuffix(v, ".fifo"):
		bad("recordStreamQueueArn", "must name a standard queue: records are sent with no message group, which a FIFO queue refuses, got %q", v)
	case !sqsArn.MatchString(v):
		bad("recordStreamQueueArn", "must be an SQS queue's ARN, such as arn:aws:sqs:eu-west-1:123456789012:crawl-records, got %q", v)
	}
}

// newRecordStream gives the parse function the stream queue's URL and the right to send to it.
func newRecordStream(cfg Config, parse awslambda.Function) {
	if cfg.RecordStreamQueueArn == "" {
		return
	}
	q := awssqs.Queue_FromQueueArn(parse, jsii.String("RecordStream"), jsii.String(cfg.RecordStreamQueueArn))
	parse.AddEnvironment(jsii.String(envRecordStream), q.QueueUrl(), nil)
	parse.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("sqs:SendMessage"),
		Resources: jsii.Strings(cfg.RecordStreamQueueArn),
	}))
}
