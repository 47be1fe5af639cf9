package crawlstack

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
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

// alarmIDs returns the logical ids of every alarm in a parsed template.
func alarmIDs(template map[string]any) []string {
	var ids []string
	for id, r := range resourcesOf(template) {
		if r["Type"] == "AWS::CloudWatch::Alarm" {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// TestMonitoringDefaults: with no context the stack has the four core alarms
// (the three dead-letter queues and stalled crawls; no budget, so no budget
// alarm), no actions on them, no topic, no key and no dashboard, so an idle
// deploy adds nothing billed beyond the alarms themselves.
func TestMonitoringDefaults(t *testing.T) {
	cfg := DefaultConfig()
	if cfg.Dashboard || !cfg.Alarms || cfg.ExtraAlarms || cfg.AlarmEmail != "" {
		t.Errorf("defaults: dashboard %v, alarms %v, extraAlarms %v, alarmEmail %q; want false, true, false, empty",
			cfg.Dashboard, cfg.Alarms, cfg.ExtraAlarms, cfg.AlarmEmail)
	}
	def, defJSON := synthWith(t, nil)
	for _, tt := range []struct {
		typ  string
		want float64
	}{
		{"AWS::CloudWatch::Alarm", 4},
		{"AWS::CloudWatch::Dashboard", 0},
		{"AWS::SNS::Topic", 0},
		{"AWS::SNS::Subscription", 0},
		{"AWS::KMS::Key", 0},
	} {
		check(t, tt.typ, func() { def.ResourceCountIs(jsii.String(tt.typ), jsii.Number(tt.want)) })
	}
	ids := alarmIDs(defJSON)
	var names []string
	for _, id := range ids {
		names = append(names, hashSuffix.ReplaceAllString(id, ""))
	}
	if want := []string{"CrawlStalled", "FetchDLQNotEmpty", "ParseDLQNotEmpty", "ScheduleDLQNotEmpty"}; !slices.Equal(names, want) {
		t.Fatalf("alarms %v, want %v", names, want)
	}
	for _, id := range ids {
		p, _ := resourcesOf(defJSON)[id]["Properties"].(map[string]any)
		for _, k := range []string{"AlarmActions", "OKActions", "InsufficientDataActions"} {
			if v, ok := p[k]; ok {
				t.Errorf("alarm %s has %s %v by default, want none", id, k, v)
			}
		}
	}
	if outs, ok := defJSON["Outputs"].(map[string]any); ok {
		if _, ok := outs["AlarmTopicArn"]; ok {
			t.Error("AlarmTopicArn output without alarmEmail")
		}
	}
}

// TestAlarmEmail: with alarmEmail (set in the test context) one encrypted
// topic mails the address, and every alarm publishes to it going into and
// out of ALARM.
func TestAlarmEmail(t *testing.T) {
	topic := logicalID(t, "AWS::SNS::Topic", "AlarmTopic")
	key := logicalID(t, "AWS::KMS::Key", "AlarmTopicKey")
	check(t, "email subscription", func() {
		tmpl.HasResourceProperties(jsii.String("AWS::SNS::Subscription"), equals(map[string]any{
			"Protocol": "email",
			"Endpoint": "ops@example.com",
			"TopicArn": ref(topic),
		}))
	})
	matchProps(t, topic, like(map[string]any{
		"KmsMasterKeyId": getAtt(key, "Arn"),
	}))
	check(t, "CloudWatch may use the key", func() {
		tmpl.HasResourceProperties(jsii.String("AWS::KMS::Key"), like(map[string]any{
			"KeyPolicy": like(map[string]any{
				"Statement": assertions.Match_ArrayWith(&[]any{like(map[string]any{
					"Effect":    "Allow",
					"Principal": map[string]any{"Service": "cloudwatch.amazonaws.com"},
					"Action":    []any{"kms:Decrypt", "kms:GenerateDataKey*"},
					"Resource":  "*",
				})}),
			}),
		}))
	})
	check(t, "key deleted with the stack after 7 days", func() {
		tmpl.HasResource(jsii.String("AWS::KMS::Key"), like(map[string]any{
			"DeletionPolicy": "Delete",
			"Properties":     like(map[string]any{"PendingWindowInDays": float64(7)}),
		}))
	})
	ids := alarmIDs(tmplJSON)
	if len(ids) != 11 {
		t.Fatalf("want 11 alarms, got %v", ids)
	}
	for _, id := range ids {
		matchProps(t, id, like(map[string]any{
			"AlarmActions": []any{ref(topic)},
			"OKActions":    []any{ref(topic)},
		}))
	}
}

// TestNoAlarms: alarms=false removes the alarms; the dashboard is a separate
// switch.
func TestNoAlarms(t *testing.T) {
	off, _ := synthWith(t, map[string]any{"alarms": "false", "dashboard": true})
	for _, tt := range []struct {
		typ  string
		want float64
	}{
		{"AWS::CloudWatch::Alarm", 0},
		{"AWS::SNS::Topic", 0},
		{"AWS::KMS::Key", 0},
		{"AWS::CloudWatch::Dashboard", 1},
	} {
		check(t, tt.typ, func() { off.ResourceCountIs(jsii.String(tt.typ), jsii.Number(tt.want)) })
	}
}
