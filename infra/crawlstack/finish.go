package crawlstack

import (
	"fmt"
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/jsii-runtime-go"
)

// A crawl's end, announced once (shared/crawl/finish): schedule runs each crawl's
// drain checks and puts a "Crawl Finished" event on the default bus, or, for a
// crawl whose work stood still with work left for FinishStallMinutes, a
// "Crawl Stalled" event (and the CrawlStalled alarm: crawlmetrics.go).

// The event's source and detail-type (shared/crawl/finish Source and DetailType).
const (
	finishSource     = "crawlstack"
	finishDetailType = "Crawl Finished"
)

// finishEnv is what the functions read to run the drain checks (pipeline
// FromEnv): one check a crawl every FinishCheckSeconds; the counters quiet
// for longer than the schedule queue's visibility timeout before a check
// tallies the items of a crawl started before the end's counters, so that a
// Links message whose admission failed or died is delivered again within that
// time; and FinishStallMinutes of counters standing still with work left
// before a crawl is announced stalled.
func finishEnv(cfg Config) map[string]string {
	quiet := cfg.Function(FnSchedule).VisibilityTimeoutSeconds() + cfg.FinishCheckSeconds
	return map[string]string{
		"CRAWL_FINISH_EVERY": strconv.Itoa(cfg.FinishCheckSeconds) + "s",
		"CRAWL_FINISH_QUIET": strconv.Itoa(quiet) + "s",
		"CRAWL_FINISH_STALL": strconv.Itoa(cfg.FinishStallMinutes) + "m",
	}
}

// finishMailed reports whether the crawls' ends are mailed: the event is on,
// the mail too, and there is an address.
func finishMailed(cfg Config) bool {
	return cfg.FinishEvent && cfg.FinishMail && cfg.AlarmEmail != ""
}

// newFinish lets schedule put events on the default bus, and only there, and
// (finishMailed, with the alarm topic) adds the rule that mails each crawl's
// end through the topic, as a few readable lines. Nothing without FinishEvent.
func newFinish(stack awscdk.Stack, cfg Config, schedule awslambda.Function, topic awssns.Topic) {
	if !cfg.FinishEvent {
		return
	}
	bus := awsevents.EventBus_FromEventBusName(stack, jsii.String("DefaultBus"), jsii.String("default"))
	bus.GrantPutEventsTo(schedule, nil)
	if !finishMailed(cfg) || topic == nil {
		return
	}
	field := func(path string) string { return *awsevents.EventField_FromPath(jsii.String("$.detail." + path)) }
	text := fmt.Sprintf("crawlstack: crawl %s ended (%s) at %s.\n"+
		"URLs: %s seen, %s fetched, %s skipped, %s failed, %s stopped; parse errors %s.\n"+
		"Cost: $%s (the crawl's ledger). Event id %s.",
		field("crawl"), field("end"), field("finishedAt"),
		field("counts.seen"), field("counts.fetched"), field("counts.skipped"), field("counts.failed"),
		field("counts.stoppedUrls"), field("counts.parseErrors"), field("costUsd"), field("eventId"))
	awsevents.NewRule(stack, jsii.String("FinishMailRule"), &awsevents.RuleProps{
		Description: jsii.String("crawlstack: mail each crawl's end (its Crawl Finished event) to the alarm address"),
		EventBus:    bus,
		EventPattern: &awsevents.EventPattern{
			Source:     jsii.Strings(finishSource),
			DetailType: jsii.Strings(finishDetailType),
		},
		Targets: &[]awsevents.IRuleTarget{
			awseventstargets.NewSnsTopic(topic, &awseventstargets.SnsTopicProps{
				Message: awsevents.RuleTargetInput_FromText(jsii.String(text)),
			}),
		},
	})
}
