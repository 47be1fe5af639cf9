package stackrun_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/testkit/cfntemplate"
	"github.com/crawlstack/crawlstack/shared/testkit/iampolicy"
	"github.com/crawlstack/crawlstack/shared/testkit/stackrun"
)

// template has the shape of the crawler's synthesized template, cut to one function.
const template = `{"Resources": {
 "FetchDLQ41B02B7D": {"Type": "AWS::SQS::Queue", "Properties": {"MessageRetentionPeriod": 1209600}},
 "FetchQueue423EEBE4": {"Type": "AWS::SQS::Queue", "Properties": {"VisibilityTimeout": 722,
   "RedrivePolicy": {"deadLetterTargetArn": {"Fn::GetAtt": ["FetchDLQ41B02B7D", "Arn"]}, "maxReceiveCount": 5}}},
 "Bucket83908E77": {"Type": "AWS::S3::Bucket"},
 "FetchFunctionServiceRoleB5203A19": {"Type": "AWS::IAM::Role"},
 "FetchFunctionServiceRoleDefaultPolicy6C60022E": {"Type": "AWS::IAM::Policy", "Properties": {
   "PolicyDocument": {"Statement": [{"Action": "s3:GetObject", "Effect": "Allow",
     "Resource": {"Fn::Join": ["", [{"Fn::GetAtt": ["Bucket83908E77", "Arn"]}, "/pages/*"]]}}]},
   "Roles": [{"Ref": "FetchFunctionServiceRoleB5203A19"}]}},
 "FetchFunction02CD8A1F": {"Type": "AWS::Lambda::Function",
   "Metadata": {"aws:cdk:path": "Crawlstack/FetchFunction/Resource"},
   "Properties": {"MemorySize": 512, "Timeout": 120, "Role": {"Fn::GetAtt": ["FetchFunctionServiceRoleB5203A19", "Arn"]},
     "Environment": {"Variables": {"CRAWL_BUCKET": {"Ref": "Bucket83908E77"}, "FETCH_QUEUE_URL": {"Ref": "FetchQueue423EEBE4"}}},
     "LoggingConfig": {"ApplicationLogLevel": "INFO", "LogFormat": "JSON"}}},
 "Helper": {"Type": "AWS::Lambda::Function", "Metadata": {"aws:cdk:path": "Crawlstack/HelperFunction/Resource"},
   "Properties": {"Code": {"ZipFile": "import boto3"}}},
 "FetchFunctionSqsEventSource": {"Type": "AWS::Lambda::EventSourceMapping", "Properties": {
   "BatchSize": 100, "MaximumBatchingWindowInSeconds": 2, "FunctionResponseTypes": ["ReportBatchItemFailures"],
   "ScalingConfig": {"MaximumConcurrency": 10},
   "EventSourceArn": {"Fn::GetAtt": ["FetchQueue423EEBE4", "Arn"]}, "FunctionName": {"Ref": "FetchFunction02CD8A1F"}}},
 "RecrawlRule": {"Type": "AWS::Events::Rule", "Properties": {"ScheduleExpression": "rate(1 day)", "State": "DISABLED",
   "Targets": [{"Arn": {"Fn::GetAtt": ["FetchFunction02CD8A1F", "Arn"]}, "Id": "Target0"}]}}
}}`

func TestRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.json")
	if err := os.WriteFile(path, []byte(template), 0o644); err != nil {
		t.Fatal(err)
	}
	tmpl, err := cfntemplate.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := stackrun.Read(tmpl, stackrun.Offline(tmpl, "x", "us-east-1", "000000000000"))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Functions) != 1 {
		t.Fatalf("functions = %v, want fetch alone (the helper has inline code)", s.Functions)
	}
	f := s.Functions["fetch"]
	for k, want := range map[string]string{
		"CRAWL_BUCKET":                    "x-bucket83908e77",
		"FETCH_QUEUE_URL":                 "http://127.0.0.1:9/000000000000/x-fetchqueue423eebe4",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512",
		"AWS_LAMBDA_FUNCTION_TIMEOUT":     "120",
		"AWS_LAMBDA_FUNCTION_NAME":        "x-fetchfunction02cd8a1f",
		"AWS_LAMBDA_LOG_FORMAT":           "JSON",
		"AWS_LAMBDA_LOG_LEVEL":            "INFO",
	} {
		if f.Env[k] != want {
			t.Errorf("%s = %q, want %q", k, f.Env[k], want)
		}
	}
	want := stackrun.Mapping{QueueURL: "http://127.0.0.1:9/000000000000/x-fetchqueue423eebe4",
		QueueARN:  "arn:aws:sqs:us-east-1:000000000000:x-fetchqueue423eebe4",
		DLQURL:    "http://127.0.0.1:9/000000000000/x-fetchdlq41b02b7d",
		BatchSize: 100, Window: 2 * time.Second, ReportFailures: true, MaxConcurrency: 10, Visibility: 722 * time.Second}
	if f.Mapping == nil || *f.Mapping != want {
		t.Errorf("mapping = %+v, want %+v", f.Mapping, want)
	}
	if ok, _ := f.Policy.Decide(iampolicy.Request{Action: "s3:GetObject", Resource: "arn:aws:s3:::x-bucket83908e77/pages/p"}); !ok {
		t.Errorf("the role's policy %v does not allow reading pages/", f.Policy)
	}
	if len(s.Rules) != 1 || s.Rules[0].Target != "fetch" || s.Rules[0].ARN != "arn:aws:events:us-east-1:000000000000:rule/x-recrawlrule" || s.Rules[0].Enabled {
		t.Errorf("rules = %+v", s.Rules)
	}
}
