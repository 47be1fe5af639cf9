package crawlstack

import (
	"slices"
	"strings"
	"testing"
)

// TestFinishMailRule: with an alarm address (the test context's), a rule on the default bus
// matches crawlstack's "Crawl Finished" events and mails them through the alarm topic, as lines
// filled from the event's detail; the topic's key lets EventBridge publish.
func TestFinishMailRule(t *testing.T) {
	rule := props(t, logicalID(t, "AWS::Events::Rule", "FinishMailRule"))
	if rule["EventBusName"] != "default" {
		t.Errorf("the rule is on bus %v, want default", rule["EventBusName"])
	}
	pattern, _ := rule["EventPattern"].(map[string]any)
	if render(list(pattern["source"])[0]) != "crawlstack" || render(list(pattern["detail-type"])[0]) != "Crawl Finished" ||
		len(pattern) != 2 {
		t.Errorf("event pattern %v: want source crawlstack and detail-type Crawl Finished only", pattern)
	}
	targets, _ := rule["Targets"].([]any)
	if len(targets) != 1 {
		t.Fatalf("targets %v: want the alarm topic alone", targets)
	}
	target := targets[0].(map[string]any)
	if render(target["Arn"]) != "AlarmTopic" {
		t.Errorf("the rule's target is %v, want the alarm topic", render(target["Arn"]))
	}
	tr, _ := target["InputTransformer"].(map[string]any)
	paths, _ := tr["InputPathsMap"].(map[string]any)
	var got []string
	for _, p := range paths {
		got = append(got, p.(string))
	}
	for _, want := range []string{"$.detail.crawl", "$.detail.end", "$.detail.counts.fetched", "$.detail.costUsd", "$.detail.eventId"} {
		if !slices.Contains(got, want) {
			t.Errorf("the mail does not show %s (paths %v)", want, got)
		}
	}
	if tmplText, _ := tr["InputTemplate"].(string); !strings.Contains(tmplText, "crawlstack: crawl <") {
		t.Errorf("the mail's text is %q", tmplText)
	}
	key := props(t, logicalID(t, "AWS::KMS::Key", "AlarmTopicKey"))
	var principals []string
	for _, s := range key["KeyPolicy"].(map[string]any)["Statement"].([]any) {
		if p, ok := s.(map[string]any)["Principal"].(map[string]any); ok {
			principals = append(principals, render(p["Service"]))
		}
	}
	if !slices.Contains(principals, "events.amazonaws.com") {
		t.Errorf("the alarm topic's key lets %v publish, not EventBridge", principals)
	}
}

// TestFinishEventOff: finishEvent=false sends no event: no drain checks in the functions'
// environment, no events:PutEvents, no Query, no mail rule and no stall alarm.
func TestFinishEventOff(t *testing.T) {
	_, off := synthWith(t, map[string]any{"finishEvent": "false", "alarmEmail": "ops@example.com"})
	for id, r := range resourcesOf(off) {
		p, _ := r["Properties"].(map[string]any)
		switch r["Type"] {
		case "AWS::Events::Rule":
			if strings.HasPrefix(id, "FinishMailRule") {
				t.Errorf("rule %s with finishEvent=false", id)
			}
		case "AWS::CloudWatch::Alarm":
			if strings.HasPrefix(id, "CrawlStalled") {
				t.Errorf("alarm %s with finishEvent=false", id)
			}
		case "AWS::Lambda::Function":
			env, _ := p["Environment"].(map[string]any)
			vars, _ := env["Variables"].(map[string]any)
			for k := range vars {
				if strings.HasPrefix(k, "CRAWL_FINISH_") {
					t.Errorf("%s has %s with finishEvent=false", id, k)
				}
			}
		case "AWS::IAM::Policy":
			for _, s := range p["PolicyDocument"].(map[string]any)["Statement"].([]any) {
				for _, a := range list(s.(map[string]any)["Action"]) {
					if a == "events:PutEvents" || a == "dynamodb:Query" {
						t.Errorf("%s grants %v with finishEvent=false", id, a)
					}
				}
			}
		}
	}
}
