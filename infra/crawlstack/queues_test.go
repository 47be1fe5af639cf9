package crawlstack

import (
	"reflect"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
)

func TestQueues(t *testing.T) {
	tests := []struct {
		fn         string
		visibility float64 // 6x the function timeout, plus the batching window
	}{
		{"Schedule", 362}, // 60 s and 2 s by default
		{"Fetch", 605},    // 100 s and 5 s from the test context
		{"Parse", 362},
	}
	for _, tt := range tests {
		t.Run(tt.fn, func(t *testing.T) {
			queue := logicalID(t, "AWS::SQS::Queue", tt.fn+"Queue")
			dlq := logicalID(t, "AWS::SQS::Queue", tt.fn+"DLQ")
			matchProps(t, queue, equals(map[string]any{
				"VisibilityTimeout":      tt.visibility,
				"MessageRetentionPeriod": float64(4 * 24 * 3600),
				"MaximumMessageSize":     float64(262144),
				"SqsManagedSseEnabled":   true,
				"RedrivePolicy": map[string]any{
					"deadLetterTargetArn": getAtt(dlq, "Arn"),
					"maxReceiveCount":     float64(6), // from the test context
				},
			}))
			matchProps(t, dlq, equals(map[string]any{
				"MessageRetentionPeriod": float64(14 * 24 * 3600),
				"MaximumMessageSize":     float64(262144),
				"SqsManagedSseEnabled":   true,
			}))

			// Cross-check the rules against the synthesized values, not constants.
			qp, dp := props(t, queue), props(t, dlq)
			fnTimeout := props(t, logicalID(t, "AWS::Lambda::Function", tt.fn+"Function"))["Timeout"].(float64)
			if got := qp["VisibilityTimeout"].(float64); got < 6*fnTimeout {
				t.Errorf("visibility timeout %v < 6 x function timeout %v", got, fnTimeout)
			}
			if got, window := qp["VisibilityTimeout"].(float64), mappingWindow(t, tt.fn); got < 6*fnTimeout+window {
				t.Errorf("visibility timeout %v < 6 x function timeout %v + batching window %v", got, fnTimeout, window)
			}
			if q, d := qp["MessageRetentionPeriod"].(float64), dp["MessageRetentionPeriod"].(float64); d <= q {
				t.Errorf("DLQ retention %v not longer than the queue's %v", d, q)
			}
			if got := qp["RedrivePolicy"].(map[string]any)["maxReceiveCount"].(float64); got < 5 {
				t.Errorf("maxReceiveCount %v < 5", got)
			}
			for _, id := range []string{queue, dlq} {
				check(t, id+" TLS-only", func() {
					tmpl.HasResourceProperties(jsii.String("AWS::SQS::QueuePolicy"), like(map[string]any{
						"Queues": []any{ref(id)},
						"PolicyDocument": like(map[string]any{
							"Statement": assertions.Match_ArrayWith(&[]any{like(map[string]any{
								"Effect":    "Deny",
								"Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}},
							})}),
						}),
					}))
				})
			}
		})
	}
}

// mappingWindow is the batching window of the event source mapping of the
// named function, from the synthesized template.
func mappingWindow(t *testing.T, fn string) float64 {
	t.Helper()
	want := ref(logicalID(t, "AWS::Lambda::Function", fn+"Function"))
	for _, r := range resources() {
		if r["Type"] != "AWS::Lambda::EventSourceMapping" {
			continue
		}
		p := r["Properties"].(map[string]any)
		if reflect.DeepEqual(p["FunctionName"], want) {
			w, _ := p["MaximumBatchingWindowInSeconds"].(float64)
			return w
		}
	}
	t.Fatalf("no event source mapping for %s", fn)
	return 0
}
