package crawlstack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsglue"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/jsii-runtime-go"
)

// newOutputs prints what a user needs after `cdk deploy`: where to drop seeds,
// where to look for results, which queues to watch or redrive and, when there
// is one, the alarm topic (nil without alarmEmail).
func newOutputs(stack awscdk.Stack, bucket bucketRef, table tableRef, queues map[string]pipelineQueue, alarmTopic awssns.Topic, results awsglue.CfnDatabase) {
	out := func(id string, value *string, desc string) {
		awscdk.NewCfnOutput(stack, jsii.String(id), &awscdk.CfnOutputProps{
			Value: value, Description: jsii.String(desc),
		})
	}
	out("BucketName", bucket.BucketName(), "bucket: drop seed files under seeds/, results under pages/ and records/")
	out("TableName", table.TableName(), "DynamoDB table of URL states, claims and host slots")
	for _, name := range []string{FnSchedule, FnFetch, FnParse, FnRender} {
		if _, ok := queues[name]; !ok {
			continue // render: only on a stack deployed with render=true
		}
		id := title(name)
		out(id+"QueueUrl", queues[name].Queue.QueueUrl(), "queue consumed by the "+name+" function")
		out(id+"DLQUrl", queues[name].DLQ.QueueUrl(), "dead-letter queue of the "+name+" queue")
	}
	out("ResultsDatabaseName", results.Ref(), "Glue database whose table "+RecordsTableName+" Athena queries the records with (docs/results.md)")
	if q, ok := queues[FnFetchSlow]; ok {
		// No DLQ output of its own: its dead-letter queue is fetch's (FetchDLQUrl).
		out("FetchslowQueueUrl", q.Queue.QueueUrl(), "queue consumed by the fetchslow function (the slow lane: runs of polite hosts); its dead-letter queue is fetch's")
	}
	if alarmTopic != nil {
		out("AlarmTopicArn", alarmTopic.TopicArn(), "SNS topic the alarms publish to (it mails alarmEmail)")
	}
}
