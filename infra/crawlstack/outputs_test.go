package crawlstack

import (
	"testing"

	"github.com/aws/jsii-runtime-go"
)

func TestOutputs(t *testing.T) {
	tests := []struct {
		output, typ, resource string
	}{
		{"BucketName", "AWS::S3::Bucket", "Bucket"},
		{"TableName", "AWS::DynamoDB::Table", "Table"},
		{"ScheduleQueueUrl", "AWS::SQS::Queue", "ScheduleQueue"},
		{"FetchQueueUrl", "AWS::SQS::Queue", "FetchQueue"},
		{"ParseQueueUrl", "AWS::SQS::Queue", "ParseQueue"},
		{"ScheduleDLQUrl", "AWS::SQS::Queue", "ScheduleDLQ"},
		{"FetchDLQUrl", "AWS::SQS::Queue", "FetchDLQ"},
		{"ParseDLQUrl", "AWS::SQS::Queue", "ParseDLQ"},
		{"AlarmTopicArn", "AWS::SNS::Topic", "AlarmTopic"}, // the test context sets alarmEmail
		{"ResultsDatabaseName", "AWS::Glue::Database", "ResultsDatabase"},
	}
	for _, tt := range tests {
		t.Run(tt.output, func(t *testing.T) {
			check(t, tt.output, func() {
				tmpl.HasOutput(jsii.String(tt.output), like(map[string]any{
					"Value": ref(logicalID(t, tt.typ, tt.resource)),
				}))
			})
		})
	}
}

// A stack with the render step gives its queues' URLs as outputs, for the CLI's redrive and
// summary; the default stack has none.
func TestTheRenderQueuesAreOutputsOnlyWithTheRenderStep(t *testing.T) {
	_, plain := synthWith(t, map[string]any{})
	_, render := synthWith(t, map[string]any{"render": true})
	for _, id := range []string{"RenderQueueUrl", "RenderDLQUrl"} {
		if _, ok := plain["Outputs"].(map[string]any)[id]; ok {
			t.Errorf("the default stack has the output %s", id)
		}
		if _, ok := render["Outputs"].(map[string]any)[id]; !ok {
			t.Errorf("the stack with render=true has no output %s", id)
		}
	}
}
