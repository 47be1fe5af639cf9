package crawlstack

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/jsii-runtime-go"
)

func TestAlarms(t *testing.T) {
	tests := []struct {
		name      string
		queue     string
		metric    string
		threshold float64
	}{
		{"schedule DLQ not empty", "ScheduleDLQ", "ApproximateNumberOfMessagesVisible", 0},
		{"fetch DLQ not empty", "FetchDLQ", "ApproximateNumberOfMessagesVisible", 0},
		{"parse DLQ not empty", "ParseDLQ", "ApproximateNumberOfMessagesVisible", 0},
		{"schedule queue stale", "ScheduleQueue", "ApproximateAgeOfOldestMessage", 3600},
		{"fetch queue stale", "FetchQueue", "ApproximateAgeOfOldestMessage", 3600},
		{"parse queue stale", "ParseQueue", "ApproximateAgeOfOldestMessage", 3600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check(t, tt.name, func() {
				tmpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), like(map[string]any{
					"Namespace":          "AWS/SQS",
					"MetricName":         tt.metric,
					"ComparisonOperator": "GreaterThanThreshold",
					"Threshold":          tt.threshold,
					"Dimensions": []any{map[string]any{
						"Name":  "QueueName",
						"Value": getAtt(logicalID(t, "AWS::SQS::Queue", tt.queue), "QueueName"),
					}},
				}))
			})
		})
	}
}

func TestDashboardShowsThePipeline(t *testing.T) {
	id := logicalID(t, "AWS::CloudWatch::Dashboard", "Dashboard")
	name, _ := json.Marshal(props(t, id)["DashboardName"])
	if want := `{"Fn::Join":["",["Test-",{"Ref":"AWS::Region"}]]}`; string(name) != want {
		t.Errorf("dashboard name %s, want %s", name, want)
	}
	body, err := json.Marshal(props(t, id)["DashboardBody"])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Queue depth", "Age of oldest message", "Dead-letter queues",
		"Invocations", "Errors", "Throttles", "Concurrent executions",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("dashboard has no %q widget", want)
		}
	}
	for _, fn := range []string{"Schedule", "Fetch", "Parse"} {
		for _, r := range []string{fn + "Queue", fn + "DLQ"} {
			if q := logicalID(t, "AWS::SQS::Queue", r); !strings.Contains(string(body), q) {
				t.Errorf("dashboard does not chart %s", r)
			}
		}
		if f := logicalID(t, "AWS::Lambda::Function", fn+"Function"); !strings.Contains(string(body), f) {
			t.Errorf("dashboard does not chart %sFunction", fn)
		}
	}
}
