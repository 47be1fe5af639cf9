package crawlstack

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
)

func TestRecrawlRuleTargetsScheduleFunction(t *testing.T) {
	fn := logicalID(t, "AWS::Lambda::Function", "ScheduleFunction")
	rule := logicalID(t, "AWS::Events::Rule", "RecrawlRule")
	matchProps(t, rule, like(map[string]any{
		"ScheduleExpression": "rate(6 hours)", // from the test context
		"State":              "ENABLED",       // from the test context; off by default
		"Targets": []any{like(map[string]any{
			"Arn": getAtt(fn, "Arn"),
			// No Input: the function gets the standard "Scheduled Event".
			"Input":            assertions.Match_Absent(),
			"InputPath":        assertions.Match_Absent(),
			"InputTransformer": assertions.Match_Absent(),
		})},
	}))
	check(t, "EventBridge may invoke schedule", func() {
		tmpl.HasResourceProperties(jsii.String("AWS::Lambda::Permission"), like(map[string]any{
			"Action":       "lambda:InvokeFunction",
			"FunctionName": getAtt(fn, "Arn"),
			"Principal":    "events.amazonaws.com",
			"SourceArn":    getAtt(rule, "Arn"),
		}))
	})
}
