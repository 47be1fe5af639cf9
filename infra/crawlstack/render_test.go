package crawlstack

import (
	"slices"
	"strings"
	"testing"
)

// renderContext turns the render step on over the defaults, with alarms.
var renderContext = map[string]any{"render": true, "alarms": true, "alarmEmail": "ops@example.com", "extraAlarms": true}

// TestTheRenderStepExistsOnlyWhenAskedFor: the default stack has no render function, queue or
// alarm, and fetch no render queue; with render=true it has the function (a container image,
// arm64, memory for a browser), its queue with a DLQ and redrive, its event source with
// ReportBatchItemFailures, its DLQ alarm, and fetch knows its queue.
func TestTheRenderStepExistsOnlyWhenAskedFor(t *testing.T) {
	for id, r := range resources() {
		if strings.HasPrefix(id, "Render") {
			t.Errorf("the default stack has %s (%v)", id, r["Type"])
		}
		if r["Type"] == "AWS::Lambda::Function" {
			p := r["Properties"].(map[string]any)
			if p["PackageType"] == "Image" {
				t.Errorf("the default stack has an image function %s", id)
			}
			if env, ok := p["Environment"].(map[string]any); ok {
				if _, has := env["Variables"].(map[string]any)["RENDER_QUEUE_URL"]; has {
					t.Errorf("%s has RENDER_QUEUE_URL in the default stack", id)
				}
			}
		}
	}

	_, tm := synthWith(t, renderContext)
	res := resourcesOf(tm)
	fnID := logicalIDIn(t, tm, "AWS::Lambda::Function", "RenderFunction")
	fn := res[fnID]["Properties"].(map[string]any)
	want := DefaultRenderFunction()
	if fn["PackageType"] != "Image" || render(fn["Architectures"]) != "[arm64]" || fn["MemorySize"] != float64(want.MemoryMB) ||
		fn["Timeout"] != float64(want.TimeoutSeconds) {
		t.Errorf("render function: package %v, architectures %v, memory %v, timeout %v; want an arm64 image of %d MB, %d s",
			fn["PackageType"], render(fn["Architectures"]), fn["MemorySize"], fn["Timeout"], want.MemoryMB, want.TimeoutSeconds)
	}
	if fn["RecursiveLoop"] != "Allow" {
		t.Errorf("render function's recursive loop %v, want Allow (the crawl is a loop)", fn["RecursiveLoop"])
	}
	q := res[logicalIDIn(t, tm, "AWS::SQS::Queue", "RenderQueue")]["Properties"].(map[string]any)
	dlq := logicalIDIn(t, tm, "AWS::SQS::Queue", "RenderDLQ")
	redrive := q["RedrivePolicy"].(map[string]any)
	if render(redrive["deadLetterTargetArn"]) != render(getAtt(dlq, "Arn")) || redrive["maxReceiveCount"].(float64) < 5 {
		t.Errorf("render queue redrive %v, want to RenderDLQ after 5 or more receives", redrive)
	}
	if vis := q["VisibilityTimeout"].(float64); vis < 6*float64(want.TimeoutSeconds) {
		t.Errorf("render queue visibility %v s, want at least 6x the timeout", vis)
	}
	if res[dlq]["Properties"].(map[string]any)["MessageRetentionPeriod"].(float64) <= q["MessageRetentionPeriod"].(float64) {
		t.Error("the render DLQ keeps messages no longer than its queue")
	}
	var mapped bool
	for _, r := range res {
		p, _ := r["Properties"].(map[string]any)
		if r["Type"] == "AWS::Lambda::EventSourceMapping" && render(p["FunctionName"]) == render(ref(fnID)) {
			mapped = true
			if !slices.Contains(list(p["FunctionResponseTypes"]), any("ReportBatchItemFailures")) || p["BatchSize"] != float64(want.BatchSize) {
				t.Errorf("render event source %v", p)
			}
		}
	}
	if !mapped {
		t.Error("no event source mapping feeds the render function")
	}
	var alarmed bool
	for _, r := range res {
		p, _ := r["Properties"].(map[string]any)
		if r["Type"] == "AWS::CloudWatch::Alarm" && strings.Contains(render(p["Dimensions"]), "RenderDLQ") {
			alarmed = true
		}
	}
	if !alarmed {
		t.Error("no alarm on the render DLQ")
	}
	fetch := res[logicalIDIn(t, tm, "AWS::Lambda::Function", "FetchFunction")]["Properties"].(map[string]any)
	if got := render(fetch["Environment"].(map[string]any)["Variables"].(map[string]any)["RENDER_QUEUE_URL"]); got != render(ref(logicalIDIn(t, tm, "AWS::SQS::Queue", "RenderQueue"))) {
		t.Errorf("fetch's RENDER_QUEUE_URL is %s, want the render queue's", got)
	}
}

// TestTheRenderFunctionsLeastPrivilege: the render function's role holds exactly the calls its
// handler makes (shared/handler/renderer): no Scan, no Query, no delete, no other prefix; and
// fetch may send to its queue.
func TestTheRenderFunctionsLeastPrivilege(t *testing.T) {
	_, tm := synthWith(t, renderContext)
	want := []string{
		"sqs:ChangeMessageVisibility RenderQueue", "sqs:DeleteMessage RenderQueue", "sqs:GetQueueAttributes RenderQueue",
		"sqs:GetQueueUrl RenderQueue", "sqs:ReceiveMessage RenderQueue", // consumes its queue
		"sqs:GetQueueAttributes ParseQueue", "sqs:GetQueueUrl ParseQueue", "sqs:SendMessage ParseQueue", // forwards to parse
		"dynamodb:GetItem Table", // is the message parsed already
		"dynamodb:PutItem Table if dynamodb:LeadingKeys=c#*,dynamodb:LeadingKeys=k#*", // its ledger's counts
		"dynamodb:UpdateItem Table if dynamodb:LeadingKeys=c#*,dynamodb:LeadingKeys=k#*",
		"s3:GetObject Bucket/pages/*", "s3:PutObject Bucket/pages/*", // reads pages, writes its WARC files
		"s3:GetObject Bucket/crawls/*/spec.json", // the crawl's render section
		"s3:PutObject Bucket/quarantine/render/*",
	}
	got := rolePermissionsIn(t, tm, "RenderFunctionServiceRole")
	for _, w := range want {
		if !got[w] {
			t.Errorf("missing permission: %s", w)
		}
	}
	for p := range got {
		if !slices.Contains(want, p) && !strings.HasPrefix(p, "ecr:") {
			t.Errorf("extra permission: %s", p)
		}
	}
	fetch := rolePermissionsIn(t, tm, "FetchFunctionServiceRole")
	if !fetch["sqs:SendMessage RenderQueue"] {
		t.Error("fetch may not send to the render queue")
	}
}
