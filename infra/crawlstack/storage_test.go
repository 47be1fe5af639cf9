package crawlstack

import (
	"strings"
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
		// Three queues and their DLQs, and the slow lane's queue, whose DLQ is fetch's.
		{"AWS::SQS::Queue", 7},
		// The four crawler functions (the slow lane's fetchslow with them) and the
		// BucketNotificationsHandler that CDK adds to configure the seeds/ notification.
		{"AWS::Lambda::Function", 5},
		{"AWS::Lambda::EventSourceMapping", 4},
		{"AWS::Logs::LogGroup", 4},
		// The re-crawl rule, and (with the test context's alarm email) the one that mails a
		// crawl's end.
		{"AWS::Events::Rule", 2},
		{"AWS::CloudWatch::Alarm", 11},
		// The test context asks for the dashboard and alarm emails.
		{"AWS::CloudWatch::Dashboard", 1},
		{"AWS::SNS::Topic", 1},
		{"AWS::SNS::Subscription", 1},
		{"AWS::KMS::Key", 1},
		{"Custom::S3BucketNotifications", 1},
		// The records table and its database (glue.go).
		{"AWS::Glue::Database", 1},
		{"AWS::Glue::Table", 1},
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
			"KeySchema": []any{map[string]any{"AttributeName": "pk", "KeyType": "HASH"},
				map[string]any{"AttributeName": "sk", "KeyType": "RANGE"}},
			"AttributeDefinitions": []any{map[string]any{"AttributeName": "pk", "AttributeType": "S"},
				map[string]any{"AttributeName": "sk", "AttributeType": "S"}},
			"BillingMode": "PAY_PER_REQUEST",
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

// bucketOf returns the Properties of the one bucket of a parsed template.
func bucketOf(t *testing.T, template map[string]any) map[string]any {
	t.Helper()
	var found []map[string]any
	for _, r := range resourcesOf(template) {
		if r["Type"] == "AWS::S3::Bucket" {
			p, _ := r["Properties"].(map[string]any)
			found = append(found, p)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one bucket, found %d", len(found))
	}
	return found[0]
}

// abortRule is the rule every configuration keeps: abandoned multipart
// uploads are billed as storage until they are aborted.
var abortRule = map[string]any{
	"Id":                             "abort-incomplete-uploads",
	"AbortIncompleteMultipartUpload": map[string]any{"DaysAfterInitiation": 7},
	"Status":                         "Enabled",
}

// TestBucketLifecycleDefaults: by default nothing expires, pages/ moves to
// Standard-IA at 90 days, and objects under 128 KB never move.
func TestBucketLifecycleDefaults(t *testing.T) {
	check(t, "lifecycle configuration", func() {
		tmpl.HasResourceProperties(jsii.String("AWS::S3::Bucket"), like(map[string]any{
			"LifecycleConfiguration": equals(map[string]any{
				"Rules": []any{
					abortRule,
					map[string]any{
						"Id": "pages", "Prefix": "pages/", "Status": "Enabled",
						"Transitions": []any{map[string]any{"StorageClass": "STANDARD_IA", "TransitionInDays": 90}},
					},
				},
				"TransitionDefaultMinimumObjectSize": "all_storage_classes_128K",
			}),
		}))
	})
	lc, _ := bucketOf(t, tmplJSON)["LifecycleConfiguration"].(map[string]any)
	rules, _ := lc["Rules"].([]any)
	if len(rules) == 0 {
		t.Fatal("no lifecycle rules")
	}
	for _, r := range rules {
		rule, _ := r.(map[string]any)
		for _, k := range []string{"ExpirationInDays", "ExpirationDate"} {
			if v, ok := rule[k]; ok {
				t.Errorf("rule %v deletes objects by default (%s %v), want no expiration", rule["Id"], k, v)
			}
		}
	}
}

// TestStorageSettingsFromContext: the context turns point-in-time recovery
// off and sets each prefix's transition and expiration.
func TestStorageSettingsFromContext(t *testing.T) {
	tm, parsed := synthWith(t, map[string]any{
		"pointInTimeRecovery":      "false",
		"pagesTransitionDays":      "0",
		"pagesExpirationDays":      "365",
		"recordsTransitionDays":    float64(60),
		"recordsExpirationDays":    float64(400),
		"quarantineExpirationDays": "14",
	})
	check(t, "point-in-time recovery off", func() {
		tm.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), like(map[string]any{
			"PointInTimeRecoverySpecification": equals(map[string]any{"PointInTimeRecoveryEnabled": false}),
		}))
	})
	check(t, "lifecycle rules", func() {
		tm.HasResourceProperties(jsii.String("AWS::S3::Bucket"), like(map[string]any{
			"LifecycleConfiguration": equals(map[string]any{
				"Rules": []any{
					abortRule,
					map[string]any{"Id": "pages", "Prefix": "pages/", "Status": "Enabled", "ExpirationInDays": 365},
					map[string]any{
						"Id": "records", "Prefix": "records/", "Status": "Enabled", "ExpirationInDays": 400,
						"Transitions": []any{map[string]any{"StorageClass": "STANDARD_IA", "TransitionInDays": 60}},
					},
					map[string]any{"Id": "quarantine", "Prefix": "quarantine/", "Status": "Enabled", "ExpirationInDays": 14},
				},
				"TransitionDefaultMinimumObjectSize": "all_storage_classes_128K",
			}),
		}))
	})
	// The rest of the bucket does not depend on these settings.
	if p := bucketOf(t, parsed); p["BucketEncryption"] == nil || p["PublicAccessBlockConfiguration"] == nil {
		t.Errorf("bucket lost its encryption or public access block: %v", p)
	}
}

// TestBadStorageSettingsStopSynth: a bad value stops the app before any
// stack exists, naming the key.
func TestBadStorageSettingsStopSynth(t *testing.T) {
	for _, tt := range []struct {
		ctx  map[string]any
		want string
	}{
		{map[string]any{"pagesTransitionDays": "-5"}, `"pagesTransitionDays"`},
		{map[string]any{"recordsTransitionDays": "90", "recordsExpirationDays": "30"}, `"recordsExpirationDays"`},
		{map[string]any{"pointInTimeRecovery": "off"}, `"pointInTimeRecovery"`},
	} {
		c := map[string]any{}
		for k, v := range tt.ctx {
			c[k] = v
		}
		_, _, _, err := synthStack(c)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("context %v: error %v, want one naming %s", tt.ctx, err, tt.want)
		}
	}
}
