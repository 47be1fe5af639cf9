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
// versions of overwritten seed files would only add storage cost. Lifecycle
// rules may move pages/, records/ and quarantine/ to Standard-IA or delete
// them, as the configuration says (see [lifecycleRules]).
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
		LifecycleRules:    lifecycleRules(cfg),
		// S3's default since September 2024, written out because the
		// defaults of DefaultConfig count on it: an object under 128 KB never
		// moves to Standard-IA, where it would be billed as 128 KB.
		TransitionDefaultMinimumObjectSize: awss3.TransitionDefaultMinimumObjectSize_ALL_STORAGE_CLASSES_128_K,
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
// host politeness slots, robots cache and budgets, keyed by the partition `pk`
// and the sort key `sk`: a crawl's items are spread over partitions of its own
// and read by Query (docs/state.md). The key schema cannot change in place: a
// stack deployed before it had `sk` gets a new table (docs/deploy.md).
// TTL cleans up expired items eventually; no handler relies on it.
// Point-in-time recovery is on unless the configuration turns it off.
func newTable(stack awscdk.Stack, cfg Config) awsdynamodb.Table {
	return awsdynamodb.NewTable(stack, jsii.String("Table"), &awsdynamodb.TableProps{
		PartitionKey: &awsdynamodb.Attribute{
			Name: jsii.String("pk"),
			Type: awsdynamodb.AttributeType_STRING,
		},
		SortKey: &awsdynamodb.Attribute{
			Name: jsii.String("sk"),
			Type: awsdynamodb.AttributeType_STRING,
		},
		BillingMode:         awsdynamodb.BillingMode_PAY_PER_REQUEST,
		TimeToLiveAttribute: jsii.String("expiresAt"),
		// Written out when off too, so that turning it off on a deployed
		// stack turns it off.
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(cfg.PointInTimeRecovery),
		},
		RemovalPolicy: removalPolicy(cfg),
	})
}
