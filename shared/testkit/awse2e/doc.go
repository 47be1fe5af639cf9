// Package awse2e holds the end-to-end tests of the crawler on the AWS adapters: the three
// handlers, wired by shared/app/pipeline and driven by the local runner (or by `crawl run --backend
// aws` itself), against SQS, DynamoDB and S3 APIs served by LocalStack or the local emulators.
//
// The package has tests only. Each test is a TestIntegration* that skips when no AWS endpoint is
// set (shared/testkit/awstest), creates its own uniquely named queues, table and bucket, and crawls a
// generated site (shared/demo/demosite) served on 127.0.0.1. Together they prove DESIGN invariants
// 1, 2 and 4 through the real APIs: a full crawl, duplicate deliveries, a crash and resume, a
// poison message through the dead-letter queue and `crawl redrive`, a lease that expires, and
// politeness waits that never burn receive counts; and invariant 12 (history_test.go): a crawl
// reads and writes the same units per page on a table that other crawls have filled.
//
// The invariant suites call t.Parallel: each has its own names and reads no process environment.
// Tests that run the crawl command set the process environment (cli.Main reads it, as a user's
// shell would) and stay serial, as do the timing tests (politeness, leases), whose clocks a
// neighbour's load could move.
package awse2e
