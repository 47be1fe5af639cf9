package crawlstack

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
)

func TestResourceCounts(t *testing.T) {
	tests := []struct {
		typ  string
		want float64
	}{
		{"AWS::S3::Bucket", 1},
		{"AWS::DynamoDB::Table", 1},
		{"AWS::SQS::Queue", 6},
		// The three crawler functions and the BucketNotificationsHandler
		// that CDK adds to configure the seeds/ notification.
		{"AWS::Lambda::Function", 4},
		{"AWS::Lambda::EventSourceMapping", 3},
		{"AWS::Logs::LogGroup", 3},
		{"AWS::Events::Rule", 1},
		{"AWS::CloudWatch::Alarm", 6},
		// The test context asks for the dashboard and alarm emails.
		{"AWS::CloudWatch::Dashboard", 1},
		{"AWS::SNS::Topic", 1},
		{"AWS::SNS::Subscription", 1},
		{"AWS::KMS::Key", 1},
		{"Custom::S3BucketNotifications", 1},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			check(t, tt.typ, func() { tmpl.ResourceCountIs(jsii.String(tt.typ), jsii.Number(tt.want)) })
		})
	}
}

func TestBucket(t *testing.T) {
	bucket := logicalID(t, "AWS::S3::Bucket", "Bucket")
	check(t, "block public access and SSE", func() {
		tmpl.HasResourceProperties(jsii.String("AWS::S3::Bucket"), like(map[string]any{
			"PublicAccessBlockConfiguration": map[string]any{
				"BlockPublicAcls": true, "BlockPublicPolicy": true,
				"IgnorePublicAcls": true, "RestrictPublicBuckets": true,
			},
			"BucketEncryption": map[string]any{
				"ServerSideEncryptionConfiguration": []any{map[string]any{
					"ServerSideEncryptionByDefault": map[string]any{"SSEAlgorithm": "AES256"},
				}},
			},
			"VersioningConfiguration": assertions.Match_Absent(),
		}))
	})
	check(t, "TLS-only bucket policy", func() {
		tmpl.HasResourceProperties(jsii.String("AWS::S3::BucketPolicy"), like(map[string]any{
			"Bucket": ref(bucket),
			"PolicyDocument": like(map[string]any{
				"Statement": assertions.Match_ArrayWith(&[]any{like(map[string]any{
					"Effect":    "Deny",
					"Action":    "s3:*",
					"Principal": map[string]any{"AWS": "*"},
					"Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}},
				})}),
			}),
		}))
	})
	check(t, "retained on destroy", func() {
		tmpl.HasResource(jsii.String("AWS::S3::Bucket"), like(map[string]any{
			"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain",
		}))
	})
}

func TestSeedNotificationGoesToScheduleQueue(t *testing.T) {
	queue := logicalID(t, "AWS::SQS::Queue", "ScheduleQueue")
	check(t, "seeds/ ObjectCreated to the schedule queue", func() {
		tmpl.HasResourceProperties(jsii.String("Custom::S3BucketNotifications"), like(map[string]any{
			"BucketName": ref(logicalID(t, "AWS::S3::Bucket", "Bucket")),
			"NotificationConfiguration": map[string]any{
				"QueueConfigurations": []any{map[string]any{
					"Events":   []any{"s3:ObjectCreated:*"},
					"Filter":   map[string]any{"Key": map[string]any{"FilterRules": []any{map[string]any{"Name": "prefix", "Value": "seeds/"}}}},
					"QueueArn": getAtt(queue, "Arn"),
				}},
			},
		}))
	})
	check(t, "S3 may send to the schedule queue", func() {
		tmpl.HasResourceProperties(jsii.String("AWS::SQS::QueuePolicy"), like(map[string]any{
			"Queues": []any{ref(queue)},
			"PolicyDocument": like(map[string]any{
				"Statement": assertions.Match_ArrayWith(&[]any{like(map[string]any{
					"Effect":    "Allow",
					"Principal": map[string]any{"Service": "s3.amazonaws.com"},
					"Action":    assertions.Match_ArrayWith(&[]any{"sqs:SendMessage"}),
				})}),
			}),
		}))
	})
}

func TestTable(t *testing.T) {
	check(t, "key, billing, TTL and PITR", func() {
		tmpl.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), assertions.Match_ObjectEquals(&map[string]any{
			"KeySchema":            []any{map[string]any{"AttributeName": "pk", "KeyType": "HASH"}},
			"AttributeDefinitions": []any{map[string]any{"AttributeName": "pk", "AttributeType": "S"}},
			"BillingMode":          "PAY_PER_REQUEST",
			"TimeToLiveSpecification": map[string]any{
				"AttributeName": "expiresAt", "Enabled": true,
			},
			"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
		}))
	})
	check(t, "retained on destroy", func() {
		tmpl.HasResource(jsii.String("AWS::DynamoDB::Table"), like(map[string]any{
			"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain",
		}))
	})
}
