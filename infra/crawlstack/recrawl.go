package crawlstack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"
)

// newRecrawlRule invokes the schedule function directly on every tick of the
// schedule expression with the standard "Scheduled Event" payload; schedule
// then re-crawls every seed file under RecrawlPrefix, each as an incremental
// recrawl of the file's previous crawl, which schedule names from the file's
// pointer (shared/handler/scheduler previous.go, shared/crawl/recrawl). The rule is disabled
// unless ScheduleEnabled is set, so a fresh deploy never crawls on its own.
func newRecrawlRule(stack awscdk.Stack, cfg Config, schedule awslambda.Function) awsevents.Rule {
	return awsevents.NewRule(stack, jsii.String("RecrawlRule"), &awsevents.RuleProps{
		Description: jsii.String("crawlstack: re-crawl the seed files under " + cfg.RecrawlPrefix),
		Schedule:    awsevents.Schedule_Expression(jsii.String(cfg.ScheduleExpression)),
		Enabled:     jsii.Bool(cfg.ScheduleEnabled),
		Targets: &[]awsevents.IRuleTarget{
			awseventstargets.NewLambdaFunction(schedule, &awseventstargets.LambdaFunctionProps{
				RetryAttempts: jsii.Number(2),
			}),
		},
	})
}
