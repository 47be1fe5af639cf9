package iampolicy_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/crawlstack/crawlstack/shared/testkit/iampolicy"
)

// policy is written as CDK synthesizes a role's default policy: single strings and lists, a
// condition on a listing, and a Deny that wins over an Allow.
const policy = `{"Version": "2012-10-17", "Statement": [
 {"Effect": "Allow", "Action": ["s3:PutObject", "s3:GetObject"], "Resource": "arn:aws:s3:::b/pages/*"},
 {"Effect": "Allow", "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::b",
  "Condition": {"StringLike": {"s3:prefix": ["seeds/*"]}}},
 {"Effect": "Allow", "Action": "sqs:Send*", "Resource": ["arn:aws:sqs:us-east-1:1:q?"]},
 {"Effect": "Deny", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/pages/secret*"},
 {"Effect": "Allow", "Action": "dynamodb:PutItem", "Resource": "arn:aws:dynamodb:us-east-1:1:table/t",
  "Condition": {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["c#*", "p#*"]}}},
 {"Effect": "Allow", "Action": "dynamodb:GetItem", "Resource": "arn:aws:dynamodb:us-east-1:1:table/t",
  "Condition": {"ForAnyValue:StringEquals": {"dynamodb:LeadingKeys": ["x#optout"]}}}
]}`

func parse(t *testing.T) iampolicy.Policy {
	t.Helper()
	var doc any
	if err := json.Unmarshal([]byte(policy), &doc); err != nil {
		t.Fatal(err)
	}
	p, err := iampolicy.Policy(nil).Parse("Default", doc)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDecide(t *testing.T) {
	p := parse(t)
	tests := []struct {
		name      string
		req       iampolicy.Request
		want      bool
		wantIndex int // the deciding statement; -1 for none
	}{
		{"ObjectUnderPrefix", iampolicy.Request{Action: "s3:GetObject", Resource: "arn:aws:s3:::b/pages/a/b.warc.gz"}, true, 0},
		{"ActionCaseInsensitive", iampolicy.Request{Action: "S3:getobject", Resource: "arn:aws:s3:::b/pages/x"}, true, 0},
		{"ResourceCaseSensitive", iampolicy.Request{Action: "s3:GetObject", Resource: "arn:aws:s3:::b/Pages/x"}, false, -1},
		{"OtherPrefix", iampolicy.Request{Action: "s3:GetObject", Resource: "arn:aws:s3:::b/records/x"}, false, -1},
		{"ExplicitDenyWins", iampolicy.Request{Action: "s3:GetObject", Resource: "arn:aws:s3:::b/pages/secret.txt"}, false, 3},
		{"ConditionHolds", iampolicy.Request{Action: "s3:ListBucket", Resource: "arn:aws:s3:::b", Context: map[string]string{"s3:prefix": "seeds/"}}, true, 1},
		{"ConditionFails", iampolicy.Request{Action: "s3:ListBucket", Resource: "arn:aws:s3:::b", Context: map[string]string{"s3:prefix": "pages/"}}, false, -1},
		{"ConditionKeyMissing", iampolicy.Request{Action: "s3:ListBucket", Resource: "arn:aws:s3:::b"}, false, -1},
		{"ForAllValuesEachMatches", iampolicy.Request{Action: "dynamodb:PutItem", Resource: "arn:aws:dynamodb:us-east-1:1:table/t",
			Values: map[string][]string{"dynamodb:LeadingKeys": {"c#crawl#3", "p#7"}}}, true, 4},
		{"ForAllValuesOneDoesNot", iampolicy.Request{Action: "dynamodb:PutItem", Resource: "arn:aws:dynamodb:us-east-1:1:table/t",
			Values: map[string][]string{"dynamodb:LeadingKeys": {"c#crawl#3", "x#optout"}}}, false, -1},
		{"ForAllValuesNoneGiven", iampolicy.Request{Action: "dynamodb:PutItem", Resource: "arn:aws:dynamodb:us-east-1:1:table/t"}, true, 4},
		{"ForAnyValueOneMatches", iampolicy.Request{Action: "dynamodb:GetItem", Resource: "arn:aws:dynamodb:us-east-1:1:table/t",
			Values: map[string][]string{"dynamodb:LeadingKeys": {"c#a#1", "x#optout"}}}, true, 5},
		{"ForAnyValueNoneGiven", iampolicy.Request{Action: "dynamodb:GetItem", Resource: "arn:aws:dynamodb:us-east-1:1:table/t"}, false, -1},
		{"ActionWildcard", iampolicy.Request{Action: "sqs:SendMessage", Resource: "arn:aws:sqs:us-east-1:1:q1"}, true, 2},
		{"QuestionMarkIsOneCharacter", iampolicy.Request{Action: "sqs:SendMessage", Resource: "arn:aws:sqs:us-east-1:1:q12"}, false, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, by := p.Decide(tt.req)
			gotIndex := -1
			if by != nil {
				gotIndex = by.Index
			}
			if got != tt.want || gotIndex != tt.wantIndex {
				t.Errorf("Decide = %v by statement %d, want %v by %d", got, gotIndex, tt.want, tt.wantIndex)
			}
		})
	}
}

func TestUnused(t *testing.T) {
	p := parse(t)
	used := []iampolicy.Request{
		{Action: "s3:PutObject", Resource: "arn:aws:s3:::b/pages/x"},
		{Action: "sqs:SendMessage", Resource: "arn:aws:sqs:us-east-1:1:q1"},
		{Action: "s3:ListBucket", Resource: "arn:aws:s3:::b", Context: map[string]string{"s3:prefix": "pages/"}}, // denied: uses nothing
	}
	var got []string
	for _, g := range p.Unused(used) {
		got = append(got, g.Action+" "+g.Resource)
	}
	want := []string{"dynamodb:GetItem arn:aws:dynamodb:us-east-1:1:table/t", "dynamodb:PutItem arn:aws:dynamodb:us-east-1:1:table/t",
		"s3:GetObject arn:aws:s3:::b/pages/*", "s3:ListBucket arn:aws:s3:::b"}
	if !slices.Equal(got, want) {
		t.Errorf("Unused = %q, want %q", got, want)
	}
}
