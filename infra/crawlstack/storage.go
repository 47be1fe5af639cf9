package crawlstack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3notifications"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
)

type (
	bucketRef = awss3.Bucket
	tableRef  = awsdynamodb.Table
)

func removalPolicy(cfg Config) awscdk.RemovalPolicy {
	if cfg.RetainData {
		return awscdk.RemovalPolicy_RETAIN
	}
	return awscdk.RemovalPolicy_DESTROY
}

// newBucket holds seeds/, pages/ (WARC files), records/ (JSON lines) and
// state/. It is private, TLS-only and encrypted with S3-managed keys.
// Versioning is off: pages and records are written once under fresh keys, and
// versions of overwritten seed files would only add storage cost.
func newBucket(stack awscdk.Stack, cfg Config) awss3.Bucket {
	return awss3.NewBucket(stack, jsii.String("Bucket"), &awss3.BucketProps{
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:        jsii.Bool(true),
		MinimumTLSVersion: jsii.Number(1.2),
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		Versioned:         jsii.Bool(false),
		RemovalPolicy:     removalPolicy(cfg),
		// Emptying the bucket on destroy needs a helper function; only
		// when the data is not retained.
		AutoDeleteObjects: jsii.Bool(!cfg.RetainData),
		LifecycleRules: &[]*awss3.LifecycleRule{{
			Id:                                  jsii.String("abort-incomplete-uploads"),
			AbortIncompleteMultipartUploadAfter: awscdk.Duration_Days(jsii.Number(7)),
		}},
	})
}

// notifySeeds sends ObjectCreated events under seeds/ to the schedule queue.
// CDK implements this with a custom resource (BucketNotificationsHandler).
func notifySeeds(bucket awss3.Bucket, scheduleQueue awssqs.Queue) {
	bucket.AddEventNotification(awss3.EventType_OBJECT_CREATED,
		awss3notifications.NewSqsDestination(scheduleQueue),
		&awss3.NotificationKeyFilter{Prefix: jsii.String(SeedsPrefix)})
}

// newTable is the one table of the crawler: dedup marks, claims with leases,
// host politeness slots, robots cache and budgets, all keyed by `pk`.
// TTL cleans up expired items eventually; no handler relies on it.
func newTable(stack awscdk.Stack, cfg Config) awsdynamodb.Table {
	return awsdynamodb.NewTable(stack, jsii.String("Table"), &awsdynamodb.TableProps{
		PartitionKey: &awsdynamodb.Attribute{
			Name: jsii.String("pk"),
			Type: awsdynamodb.AttributeType_STRING,
		},
		BillingMode:         awsdynamodb.BillingMode_PAY_PER_REQUEST,
		TimeToLiveAttribute: jsii.String("expiresAt"),
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		RemovalPolicy: removalPolicy(cfg),
	})
}
