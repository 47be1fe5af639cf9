// Package crawlstack defines the AWS CDK stack of the crawler: the bucket, the
// table, the schedule, fetch and parse queues with their dead-letter queues,
// the three Lambda functions that consume them, the EventBridge re-crawl rule,
// and the alarms (optionally mailed through an SNS topic) and the optional
// dashboard that watch it all.
//
// Every tunable value comes from a [Config], which [ConfigFromContext] reads
// from CDK context (cdk.json or `cdk -c key=value`) and validates.
package crawlstack
