package stacke2e

import (
	"context"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// envRecordStream is the variable in which the template gives parse the record stream's queue URL
// (infra/crawlstack recordstream.go).
const envRecordStream = "CRAWL_RECORD_STREAM_QUEUE_URL"

// importQueues stands up the queues the template imports rather than creates (the record stream,
// a queue of the user's, recordStreamQueueArn): each is created on the emulator under the name
// and in the account that the template's URL names, and the functions get the emulator's URL of
// it, since the template's URL names AWS's host (sqs.REGION.amazonaws.com), which the emulator
// does not answer for. It returns the emulator's URL of each, keyed by the variable.
func (d *deployment) importQueues(ctx context.Context) map[string]string {
	d.t.Helper()
	out := map[string]string{}
	for name, f := range d.stack.Functions {
		v, ok := f.Env[envRecordStream]
		if !ok {
			continue
		}
		u, err := url.Parse(v)
		parts := strings.Split(strings.Trim(u.Path, "/"), "/")
		if err != nil || u.Scheme != "https" || !strings.HasPrefix(u.Host, "sqs.") || len(parts) != 2 {
			d.t.Fatalf("%s: %s=%q is not an SQS queue URL", name, envRecordStream, v)
		}
		if parts[0] != d.stack.Physical.Account {
			d.t.Fatalf("%s: %s names account %s; the template's recordStreamQueueArn must name the emulator's, %s",
				name, envRecordStream, parts[0], d.stack.Physical.Account)
		}
		q, err := d.clients.SQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(parts[1])})
		if err != nil {
			d.t.Fatalf("create the imported queue %s: %v", parts[1], err)
		}
		f.Env[envRecordStream] = aws.ToString(q.QueueUrl)
		out[envRecordStream] = aws.ToString(q.QueueUrl)
	}
	return out
}
