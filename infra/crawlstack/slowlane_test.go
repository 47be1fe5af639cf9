package crawlstack

import (
	"testing"
)

// crawlFunctionsIn is how many crawl functions a template should have: the three, and the slow
// lane's when it has the lane's queue (runUrls of 2 or more).
func crawlFunctionsIn(template map[string]any) int {
	for id, r := range resourcesOf(template) {
		if r["Type"] == "AWS::SQS::Queue" && hashSuffix.ReplaceAllString(id, "") == "FetchslowQueue" {
			return 4
		}
	}
	return 3
}

// withLane is ctx with runs of 10, and so the slow lane.
func withLane(ctx map[string]any) map[string]any {
	out := map[string]any{"runUrls": "10"}
	for k, v := range ctx {
		out[k] = v
	}
	return out
}

// TestSlowLaneSharesFetchsDeadLetterQueue: the slow lane's queue sends what fails maxReceiveCount
// times to fetch's dead-letter queue, whose one alarm watches both, and hides a batch as long as
// its function may work on it; the test context leaves runUrls at its default, 10, so the lane is
// there by default; a stack without runs (runUrls 0) has no lane at all.
func TestSlowLaneSharesFetchsDeadLetterQueue(t *testing.T) {
	slow := logicalID(t, "AWS::SQS::Queue", "FetchslowQueue")
	fetchDLQ := logicalID(t, "AWS::SQS::Queue", "FetchDLQ")
	matchProps(t, slow, equals(map[string]any{
		"VisibilityTimeout":      float64(6*120 + 2), // 6 x its 120 s timeout, plus its 2 s window
		"MessageRetentionPeriod": float64(4 * 24 * 3600),
		"MaximumMessageSize":     float64(262144),
		"SqsManagedSseEnabled":   true,
		"RedrivePolicy": map[string]any{
			"deadLetterTargetArn": getAtt(fetchDLQ, "Arn"),
			"maxReceiveCount":     float64(6), // from the test context
		},
	}))
	dlqAlarms := 0
	for _, r := range resourcesOf(tmplJSON) {
		if r["Type"] != "AWS::CloudWatch::Alarm" {
			continue
		}
		dims, _ := r["Properties"].(map[string]any)["Dimensions"].([]any)
		for _, d := range dims {
			if v := d.(map[string]any)["Value"]; render(v) == "FetchDLQ" || render(v) == "FetchslowQueue" {
				dlqAlarms++
			}
		}
	}
	if dlqAlarms != 1 {
		t.Errorf("%d alarms on fetch's dead-letter queue or the slow lane's queue, want 1 (FetchDLQNotEmpty)", dlqAlarms)
	}

	_, plain := synthWith(t, map[string]any{"runUrls": "0"})
	for id, r := range resourcesOf(plain) {
		if n := hashSuffix.ReplaceAllString(id, ""); n == "FetchslowQueue" || n == "FetchslowFunction" {
			t.Errorf("runUrls 0: the stack has %s (%s), want no slow lane", id, r["Type"])
		}
	}
	for id, env := range crawlFunctionEnvs(plain) {
		if env["CRAWL_RUN_URLS"] != "0" || env["FETCHSLOW_QUEUE_URL"] != nil {
			t.Errorf("runUrls 0: %s has CRAWL_RUN_URLS %v and FETCHSLOW_QUEUE_URL %v, want 0 and none", id, env["CRAWL_RUN_URLS"], env["FETCHSLOW_QUEUE_URL"])
		}
	}
}
